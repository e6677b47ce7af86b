"""The write path: what people, admins, plugins and models propose (candidates), how it is
read from messages (statements, extraction, dates) and how it is committed."""
