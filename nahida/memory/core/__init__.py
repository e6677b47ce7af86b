"""What every layer of memory shares: the value types, scopes, access, the registry of
memory kinds, the secret screen and the index tokens. The store imports only this package."""
