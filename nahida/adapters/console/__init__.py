"""The terminal chat: `console:private:local`, user `console:local` (a bot admin)."""
