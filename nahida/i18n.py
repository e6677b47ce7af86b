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
    "storage_failed": {
        "zh": "抱歉，我这边的存储出了问题（比如磁盘满了），这条消息没能记下，暂时没法回答。"
        "管理员可以运行 nahida doctor 查看。",
        "en": "Sorry, my storage failed (the disk may be full): I could not keep this message"
        " and cannot answer it now. An admin can run `nahida doctor` to see why.",
    },
    "empty_model_reply": {
        "zh": "（模型没有给出回答）",
        "en": "(the model gave no answer)",
    },
    "reply_cut": {
        "zh": "（回答有 {n} 个字，太长了：只发了前 {limit} 个字）",
        "en": "(the answer had {n} characters, too many: only the first {limit} are shown)",
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
    "turns_count_one": {"zh": "{n} 条", "en": "{n} turn"},
    "no_earlier_session": {
        "zh": "还没有更早的会话可以继续。",
        "en": "There is no earlier session to go back to.",
    },
    "reply_too_late": {
        "zh": "抱歉，刚才消息太多，这条回复晚了。请再说一次？",
        "en": "Sorry, there were too many messages and this reply came too late. Could you say"
        " it again?",
    },
    "rate_limited": {
        "zh": "这里消息有点多，我先歇一会儿，过一分钟再叫我吧。",
        "en": "That's a lot of messages here; I'll pause for a minute before answering again.",
    },
    # /memory -------------------------------------------------------------------------------
    "cmd_memory": {
        "zh": "查看和管理长期记忆：/memory remember|search|list|forget|why|review|dream",
        "en": "see and manage long-term memory:"
        " /memory remember|search|list|forget|why|review|dream",
    },
    "memory_usage": {
        "zh": "用法：\n"
        "/memory remember <内容> — 记住一件事\n"
        "/memory search <关键词> — 搜索记忆和聊天记录\n"
        "/memory list [种类] — 列出记忆\n"
        "/memory forget <编号> — 遗忘（归档）一条记忆\n"
        "/memory why <编号> — 查看来源和修改记录\n"
        "/memory review [accept|reject <编号>] — 审核待定的记忆\n"
        "/memory dream [pause|resume] — 现在整理本聊天的新对话（做梦），或暂停/恢复",
        "en": "Usage:\n"
        "/memory remember <text> — remember something\n"
        "/memory search <words> — search memory and chat history\n"
        "/memory list [kind] — list memories\n"
        "/memory forget <id> — forget (archive) a memory\n"
        "/memory why <id> — where a memory came from and how it changed\n"
        "/memory review [accept|reject <id>] — review pending memories\n"
        "/memory dream [pause|resume] — consolidate this chat's new turns now, or pause/resume",
    },
    "command_later_refused": {
        "zh": "正在关闭，没有开始。请稍后再试。",
        "en": "Shutting down; not started. Please try again later.",
    },
    "memory_dream_usage": {
        "zh": "用法：/memory dream [pause|resume]",
        "en": "Usage: /memory dream [pause|resume]",
    },
    "memory_dream_denied": {
        "zh": "只有机器人管理员或群主/管理员（在本群）可以让我做梦整理记忆。",
        "en": "Only bot admins, or a group's owner/admins (in that group), can start or pause"
        " dreaming.",
    },
    "memory_dream_no_model": {
        "zh": "没有配置模型，无法做梦整理记忆（需要 models.dream 或聊天模型）。",
        "en": "No model is configured, so there is no dreaming (it needs models.dream or a chat"
        " model).",
    },
    "memory_dream_paused": {
        "zh": "本聊天的做梦已暂停；用 /memory dream resume 恢复。",
        "en": "Dreaming is paused in this chat; /memory dream resume turns it back on.",
    },
    "memory_dream_paused_now": {
        "zh": "已暂停本聊天的做梦（定时的也不会整理这里）；用 /memory dream resume 恢复。",
        "en": "Dreaming is paused in this chat (scheduled runs skip it too);"
        " /memory dream resume turns it back on.",
    },
    "memory_dream_resumed": {
        "zh": "已恢复本聊天的做梦。",
        "en": "Dreaming is back on in this chat.",
    },
    "memory_dream_started": {
        "zh": "开始做梦：整理本聊天的新对话，完成后告诉你结果。",
        "en": "Dreaming: consolidating this chat's new turns; I will say how it went.",
    },
    "memory_dream_busy": {
        "zh": "本聊天正在做梦中，请等这次结束。",
        "en": "This chat is being dreamed already; wait for that run to finish.",
    },
    "memory_dream_nothing": {
        "zh": "没有新的对话可以整理。",
        "en": "Nothing new to dream.",
    },
    "memory_dream_done": {
        "zh": "做梦完成（{id}，{turns} 条对话）：新增 {created}，合并 {merged}，更新 {superseded}，"
        "归档 {archived}，待审核 {pending}，拒绝 {rejected}。",
        "en": "Dreamed ({id}, {turns} turns): added {created}, merged {merged}, superseded"
        " {superseded}, archived {archived}, left for review {pending}, rejected {rejected}.",
    },
    "memory_dream_degraded": {
        "zh": "（模型的回答不可用，部分改用规则提取）",
        "en": " (the model's answer was unusable; rule extraction was used)",
    },
    "memory_dream_failed": {
        "zh": "做梦没有完成（{id}）：{error}。已整理的部分保留，下次从中断处继续。",
        "en": "The dream run did not finish ({id}): {error}. What it applied stays; the next run"
        " continues from there.",
    },
    "memory_remember_usage": {
        "zh": "用法：/memory remember <要记住的内容>",
        "en": "Usage: /memory remember <what to remember>",
    },
    "memory_remembered": {"zh": "记住了（{id}）。", "en": "Remembered ({id})."},
    "memory_merged": {
        "zh": "已有相同的记忆 {id}，已合并。",
        "en": "Already known as {id}; merged into it.",
    },
    "memory_superseded": {
        "zh": "记住了（{id}），取代了 {old}。",
        "en": "Remembered ({id}); it replaces {old}.",
    },
    "memory_pending": {
        "zh": "已提交，等待审核（{id}）。",
        "en": "Submitted; waiting for review ({id}).",
    },
    "memory_rule_group": {
        "zh": "这是全群的行为规则。",
        "en": "It is a rule for everyone in this group.",
    },
    "memory_rule_yours": {
        "zh": "这条行为规则只用于回答你：全群的规则只有群主和管理员能定。",
        "en": "This rule is for answering you only: only the group's owner and admins set rules"
        " for everyone.",
    },
    "memory_rule_links": {
        "zh": "规则里的链接和联系方式不会交给模型。",
        "en": "Its links and contacts are not passed to the model.",
    },
    "message_too_long": {
        "zh": "这条消息有 {n} 个字，太长了：我一次最多读 {limit} 个字，请分几段发。",
        "en": "That message has {n} characters, more than the {limit} I read at once:"
        " please send it in parts.",
    },
    "memory_too_long": {
        "zh": "这段内容有 {n} 个字，超过了一条记忆的上限 {limit} 字，没有保存。请只记要点。",
        "en": "That is {n} characters, over the {limit} a memory may hold; nothing was stored.",
    },
    "memory_secret_refused": {
        "zh": "这段内容像是包含密钥、令牌或密码，为了安全什么都没有保存。",
        "en": "That looks like it contains a key, token or password; nothing was stored.",
    },
    "memory_search_usage": {
        "zh": "用法：/memory search <关键词>",
        "en": "Usage: /memory search <words>",
    },
    "memory_no_results": {
        "zh": "没有找到和“{query}”相关的记忆。",
        "en": "Nothing found for “{query}”.",
    },
    "memory_bot_speaker": {"zh": "机器人", "en": "bot"},
    "memory_episode": {"zh": "上次对话", "en": "earlier conversation"},
    "memory_search_header": {"zh": "“{query}”的搜索结果：", "en": "Found for “{query}”:"},
    "memory_list_usage": {
        "zh": "用法：/memory list [种类]，种类可以是：{kinds}",
        "en": "Usage: /memory list [kind], where kind is one of: {kinds}",
    },
    "memory_list_header": {"zh": "记忆（最近 {n} 条）：", "en": "Memories (latest {n}):"},
    "memory_list_empty": {"zh": "这里还没有记忆。", "en": "No memories here yet."},
    "memory_forget_usage": {
        "zh": "用法：/memory forget <记忆编号>",
        "en": "Usage: /memory forget <memory id>",
    },
    "memory_not_found": {
        "zh": "找不到记忆 {id}。",
        "en": "No memory {id} here.",
    },
    "memory_not_active": {
        "zh": "记忆 {id} 已经不再生效（{status}）。",
        "en": "Memory {id} is no longer in effect ({status}).",
    },
    "memory_forget_denied": {
        "zh": "不能遗忘 {id}：只有记忆涉及的本人、群主/管理员（本群记忆）或机器人管理员可以。",
        "en": "You cannot forget {id}: only the person it is about, the group's owner or admins "
        "(for this group's memories) or a bot admin can.",
    },
    "memory_forgotten": {
        "zh": "已遗忘 {id}（已归档，记录保留，可用 /memory why {id} 查看）。",
        "en": "Forgot {id} (archived; the record stays: /memory why {id}).",
    },
    "memory_why_usage": {
        "zh": "用法：/memory why <记忆编号>",
        "en": "Usage: /memory why <memory id>",
    },
    "memory_why_source": {
        "zh": "来源：{source} · 范围：{scope} · 置信度：{confidence}",
        "en": "Source: {source} · scope: {scope} · confidence: {confidence}",
    },
    "memory_why_evidence": {"zh": "依据：", "en": "Evidence:"},
    "memory_why_no_evidence": {"zh": "依据：无记录", "en": "Evidence: none recorded"},
    "memory_why_more": {"zh": "……还有 {n} 条", "en": "… and {n} more"},
    "memory_why_history": {"zh": "变更记录：", "en": "History:"},
    "memory_why_supersedes": {"zh": "它取代了 {id}。", "en": "It replaced {id}."},
    "memory_why_replaced_by": {"zh": "它已被 {id} 取代。", "en": "It was replaced by {id}."},
    "memory_why_bullet": {
        "zh": "{id} · 画像 · {section} · {status}",
        "en": "{id} · profile · {section} · {status}",
    },
    "memory_why_bullet_source": {
        "zh": "来源：{source} · {sensitivity}",
        "en": "Source: {source} · {sensitivity}",
    },
    "memory_sensitivity_public": {"zh": "公开（群里可见）", "en": "public (seen in groups)"},
    "memory_sensitivity_private": {"zh": "私密（只在私聊中）", "en": "private (private chat only)"},
    "memory_why_hidden": {
        "zh": "不再被回忆或只作为“以前”回忆的聊天记录（{n} 条，↺ 为以前；都仍保存在会话里）：",
        "en": "Chat turns no longer recalled, or recalled as earlier (↺) ({n}, all still kept):",
    },
    "memory_earlier": {"zh": "（以前）", "en": "(earlier) "},
    "memory_status_active": {"zh": "有效", "en": "active"},
    "memory_status_archived": {"zh": "已归档", "en": "archived"},
    "memory_status_superseded": {"zh": "已被取代", "en": "superseded"},
    "memory_status_rejected": {"zh": "已拒绝", "en": "rejected"},
    "memory_event_create": {"zh": "创建", "en": "created"},
    "memory_event_merge": {"zh": "合并", "en": "merged"},
    "memory_event_supersede": {"zh": "被取代", "en": "superseded"},
    "memory_event_archive": {"zh": "归档", "en": "archived"},
    "memory_event_update": {"zh": "改写", "en": "rewritten"},
    "memory_event_replace": {"zh": "替换", "en": "replaced"},
    "memory_event_restore": {"zh": "恢复", "en": "restored"},
    "memory_event_purged": {"zh": "彻底删除", "en": "purged"},
    "memory_review_usage": {
        "zh": "用法：/memory review 查看待审核；/memory review accept|reject <候选编号>",
        "en": "Usage: /memory review to list; /memory review accept|reject <candidate id>",
    },
    "memory_review_denied": {
        "zh": "只有机器人管理员或群主/管理员（本群的候选）可以审核记忆。",
        "en": "Only bot admins, or a group's owner/admins (for that group), can review memories.",
    },
    "memory_review_empty": {"zh": "没有待审核的记忆。", "en": "Nothing is waiting for review."},
    "memory_review_header": {
        "zh": "待审核（/memory review accept|reject <编号>）：",
        "en": "Waiting for review (/memory review accept|reject <id>):",
    },
    "memory_review_accepted": {
        "zh": "已接受 {id}，成为记忆 {item}。",
        "en": "Accepted {id} as {item}.",
    },
    "memory_review_merged": {
        "zh": "已接受 {id}，合并进已有记忆 {item}。",
        "en": "Accepted {id}; merged into {item}.",
    },
    "memory_review_archived": {
        "zh": "已接受 {id}，记忆 {item} 已归档（不再被回忆）。",
        "en": "Accepted {id}; {item} is archived (no longer recalled).",
    },
    "memory_review_updated": {
        "zh": "已接受 {id}，记忆 {item} 已更新。",
        "en": "Accepted {id}; {item} is updated.",
    },
    "memory_review_superseded": {
        "zh": "已接受 {id}，新记忆 {item} 取代了旧的。",
        "en": "Accepted {id}; the new {item} replaces the old one.",
    },
    "memory_review_not_applied": {
        "zh": "无法应用 {id}：{reason}",
        "en": "Could not apply {id}: {reason}",
    },
    "memory_review_rejected": {"zh": "已拒绝 {id}。", "en": "Rejected {id}."},
    "memory_review_not_found": {
        "zh": "找不到待审核的候选 {id}。",
        "en": "No pending candidate {id} here.",
    },
    # /profile ------------------------------------------------------------------------------
    "cmd_rules": {
        "zh": "查看在此生效的行为规则：/rules；移除一条：/rules forget <编号>",
        "en": "see the behaviour rules in force here: /rules; remove one: /rules forget <id>",
    },
    "rules_none": {
        "zh": "这里还没有生效的行为规则（比如说“以后回答我都用英文”）。",
        "en": "No behaviour rules are in force here yet (e.g. 'answer me in English from now on').",
    },
    "rules_header": {
        "zh": "在此生效的行为规则（{n} 条）：",
        "en": "Behaviour rules in force here ({n}):",
    },
    "rules_not_found": {"zh": "这里没有行为规则 {id}。", "en": "No behaviour rule {id} here."},
    "rules_forgotten": {
        "zh": "已移除规则 {id}（已归档，可用 /memory why {id} 查看）。",
        "en": "Removed rule {id} (archived: /memory why {id}).",
    },
    "rules_usage": {
        "zh": "用法：/rules 或 /rules forget <编号>",
        "en": "Usage: /rules or /rules forget <id>",
    },
    "cmd_profile": {
        "zh": "查看你的画像：/profile；归档其中一个分区：/profile forget <分区>",
        "en": "see your profile: /profile; archive one of its sections: /profile forget <section>",
    },
    "profile_usage": {
        "zh": "用法：\n/profile — 查看你的画像\n/profile forget <分区> — 归档这个分区的内容\n"
        "分区：{sections}",
        "en": "Usage:\n/profile — see your profile\n/profile forget <section> — archive that"
        " section\nSections: {sections}",
    },
    "profile_header": {"zh": "你的画像：", "en": "Your profile:"},
    "profile_empty": {"zh": "还没有你的画像。", "en": "There is no profile of you yet."},
    "profile_more": {"zh": "……还有 {n} 条未显示。", "en": "… and {n} more not shown."},
    "profile_private_hint": {
        "zh": "（这里只显示公开的部分；私密的部分请在私聊中用 /profile 查看。）",
        "en": "(Only the public part is shown here; see the private part with /profile in a"
        " private chat.)",
    },
    "profile_unknown_section": {
        "zh": "没有“{name}”这个分区。分区：{sections}",
        "en": "There is no section “{name}”. Sections: {sections}",
    },
    "profile_forgotten": {
        "zh": "已归档“{section}”中的 {n} 条（记录保留）。",
        "en": "Archived {n} from “{section}” (the record stays).",
    },
    "profile_forget_none": {
        "zh": "“{section}”里没有可以归档的内容。",
        "en": "Nothing to archive in “{section}”.",
    },
}


def t(key: str, lang: Language = "zh", **values: object) -> str:
    text = MESSAGES[key][lang]
    return text.format(**values) if values else text
