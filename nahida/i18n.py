"""User-facing strings in Chinese (default) and English. Keys are stable; add both languages."""

from __future__ import annotations

from typing import Literal

Language = Literal["zh", "en"]

MESSAGES: dict[str, dict[Language, str]] = {
    "no_model": {
        "zh": "还没有配置模型：请设置 OPENAI_API_KEY（或 ANTHROPIC_API_KEY）后重启。"
        "命令仍可使用，输入 /help 查看。",
        "en": "No model is configured: set OPENAI_API_KEY (or ANTHROPIC_API_KEY) and restart. "
        "Commands still work; type /help.",
    },
    "provider_failed": {
        "zh": "抱歉，模型暂时没有回应，请稍后再试。",
        "en": "Sorry, the model did not answer. Please try again in a moment.",
    },
    "empty_model_reply": {
        "zh": "（模型没有给出回答）",
        "en": "(the model gave no answer)",
    },
    "help": {
        "zh": "可用命令：\n{commands}",
        "en": "Commands:\n{commands}",
    },
    "unknown_command": {
        "zh": "没有这个命令：/{name}。输入 /help 查看可用命令。",
        "en": "No such command: /{name}. Type /help for the list.",
    },
    "command_failed": {
        "zh": "命令执行出错了，已记录。",
        "en": "The command failed; the error was logged.",
    },
    "cmd_help": {"zh": "显示这份帮助", "en": "show this help"},
    "cmd_new": {"zh": "开始新的会话", "en": "start a new session"},
    "cmd_sessions": {"zh": "列出本聊天最近的会话", "en": "list this chat's recent sessions"},
    "cmd_resume": {
        "zh": "回到某个会话：/resume <编号|编号结尾|last>",
        "en": "go back to a session: /resume <id|id suffix|last>",
    },
    "new_session": {
        "zh": "好的，新的会话从你的下一条消息开始。",
        "en": "OK, a new session starts with your next message.",
    },
    "no_sessions": {"zh": "这里还没有会话。", "en": "No sessions here yet."},
    "sessions_header": {"zh": "最近的会话：", "en": "Recent sessions:"},
    "current_marker": {"zh": "（当前）", "en": " (current)"},
    "resume_usage": {
        "zh": "用法：/resume <会话编号|编号结尾|last>",
        "en": "Usage: /resume <session id|id suffix|last>",
    },
    "session_not_found": {
        "zh": "找不到会话“{ref}”。用 /sessions 查看编号。",
        "en": "No session matches “{ref}”. Use /sessions to see the ids.",
    },
    "resumed": {
        "zh": "已回到会话 {id}：{title}",
        "en": "Resumed session {id}: {title}",
    },
    "turns_count": {"zh": "{n} 条", "en": "{n} turns"},
}


def t(key: str, lang: Language = "zh", **values: object) -> str:
    text = MESSAGES[key][lang]
    return text.format(**values) if values else text
