"""Lark/Feishu through the official lark-oapi SDK: long connection or webhook in, open API out."""
