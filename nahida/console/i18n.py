"""The console's words in Chinese (default) and English, keyed as `nahida.i18n` keys the chat's.

The language of a page: `?lang=` when a person switched (kept in a cookie from then on), else the
cookie, else `admin.language`, else `bot.language`.
"""

from __future__ import annotations

from typing import get_args

from nahida.i18n import Language

LANGUAGES: tuple[Language, ...] = get_args(Language)

MESSAGES: dict[str, dict[Language, str]] = {
    "title": {"zh": "Nahida 记忆控制台", "en": "Nahida memory console"},
    "switch_to": {"zh": "English", "en": "中文"},
    "logout": {"zh": "退出", "en": "Log out"},
    "skip": {"zh": "跳到正文", "en": "Skip to content"},
    # the pages
    "page_overview": {"zh": "概览", "en": "Overview"},
    "page_memory": {"zh": "记忆", "en": "Memory"},
    "page_item": {"zh": "条目", "en": "Item"},
    "page_review": {"zh": "审核", "en": "Review"},
    "page_people": {"zh": "人物", "en": "People"},
    "page_chats": {"zh": "聊天", "en": "Chats"},
    "page_dreams": {"zh": "做梦", "en": "Dreams"},
    "page_settings": {"zh": "设置", "en": "Settings"},
    # login
    "login_title": {"zh": "登录", "en": "Log in"},
    "login_secret": {"zh": "令牌或密码", "en": "Token or password"},
    "login_button": {"zh": "登录", "en": "Log in"},
    "login_hint": {
        "zh": "令牌在数据目录里：在运行机器人的机器上执行 nahida admin token 查看。",
        "en": "The token is in the data dir: run `nahida admin token` where the bot runs.",
    },
    "login_wrong": {"zh": "令牌或密码不对。", "en": "Wrong token or password."},
    "login_limited": {
        "zh": "失败次数太多，请 {seconds} 秒后再试。",
        "en": "Too many failed logins: try again in {seconds} s.",
    },
    "logged_out": {"zh": "已退出。", "en": "Logged out."},
    "login_stale": {
        "zh": "登录页面已过期，请再试一次。",
        "en": "The login page had expired; please try again.",
    },
    # memory: search as a viewer
    "memory_title": {"zh": "以某人的身份搜索记忆", "en": "Search memory as a viewer"},
    "memory_intro": {
        "zh": "机器人在这个聊天里替这个人回忆时会找到什么：范围规则和机器人自己回忆时完全一样。"
        "私聊里只有这个人自己的记忆；群里只有群的记忆和这个人公开的记忆。",
        "en": "What the bot would recall for this person in this chat, with exactly the scope"
        " rules of its own recall: a private chat sees that person's memory; a group sees the"
        " group's memory and what its members made public.",
    },
    "field_chat": {"zh": "聊天", "en": "Chat"},
    "field_chat_hint": {
        "zh": "ChatKey，比如 onebot:group:123 或 onebot:private:42",
        "en": "a ChatKey, e.g. onebot:group:123 or onebot:private:42",
    },
    "field_user": {"zh": "人（可选）", "en": "Person (optional)"},
    "field_user_hint": {
        "zh": "这个平台上的用户号，比如 42 或 onebot:42",
        "en": "a user id on the chat's platform, e.g. 42 or onebot:42",
    },
    "field_q": {"zh": "问题或关键词", "en": "Question or words"},
    "search_button": {"zh": "搜索", "en": "Search"},
    "search_bad": {"zh": "输入有误：{error}", "en": "Cannot search: {error}"},
    "search_none": {"zh": "这个人在这里找不到相关的记忆。", "en": "Nothing found for this viewer."},
    "search_sees": {"zh": "可见范围", "en": "Sees in full"},
    "search_sees_public": {"zh": "只看公开的", "en": "Sees public items of"},
    "search_mode": {
        "zh": "检索方式 {mode}，用时 {ms} 毫秒",
        "en": "search {mode}, took {ms} ms",
    },
    "col_rank": {"zh": "#", "en": "#"},
    "col_kind": {"zh": "种类", "en": "Kind"},
    "col_time": {"zh": "时间", "en": "Time"},
    "col_who": {"zh": "说话人", "en": "Speaker"},
    "col_scope": {"zh": "范围", "en": "Scope"},
    "col_text": {"zh": "内容", "en": "Text"},
    "kind_turn": {"zh": "聊天记录", "en": "turn"},
    "kind_item": {"zh": "记忆", "en": "memory"},
    "kind_episode": {"zh": "片段", "en": "episode"},
    "bot_speaker": {"zh": "（机器人）", "en": "(the bot)"},
    "earlier": {"zh": "（已被更新的说法）", "en": "(since replaced)"},
    # settings
    "settings_title": {"zh": "设置与检查", "en": "Settings and checks"},
    "settings_config": {
        "zh": "生效的配置（密钥已隐藏）",
        "en": "Effective config (secrets masked)",
    },
    "settings_checks": {"zh": "检查（同 nahida doctor）", "en": "Checks (as `nahida doctor`)"},
    "settings_ok": {
        "zh": "检查通过（标着 -- 的几行值得看一看）。",
        "en": "The checks pass (lines marked -- are worth a look).",
    },
    "settings_problems": {
        "zh": "有检查没有通过：看标着 -- 的几行（nahida doctor 此时以 1 退出）。",
        "en": "A check fails: see the lines marked -- (`nahida doctor` exits 1 now).",
    },
    "settings_no_checks": {
        "zh": "这个进程没有提供检查；请运行 nahida doctor。",
        "en": "This process runs no checks; run `nahida doctor`.",
    },
    # items, review and people (console-pages-b)
    "items_title": {"zh": "记忆条目", "en": "Memory items"},
    "items_bad": {"zh": "筛选有误：{error}", "en": "Cannot filter: {error}"},
    "items_none": {"zh": "没有符合条件的条目。", "en": "No item matches."},
    "filter_button": {"zh": "筛选", "en": "Filter"},
    "field_since": {"zh": "创建于（起）", "en": "Created from"},
    "field_until": {"zh": "创建于（止）", "en": "Created until"},
    "col_status": {"zh": "状态", "en": "Status"},
    "col_source": {"zh": "来源", "en": "Source"},
    "col_audience": {"zh": "谁能看到", "en": "Who sees it"},
    "col_confidence": {"zh": "置信度", "en": "Confidence"},
    "col_last_used": {"zh": "最近使用", "en": "Last used"},
    "col_sensitivity": {"zh": "公开性", "en": "Sensitivity"},
    "col_valid": {"zh": "有效期", "en": "Valid"},
    "prev_page": {"zh": "上一页", "en": "Previous"},
    "next_page": {"zh": "下一页", "en": "Next"},
    "rows_of": {"zh": "第 {first}–{last} 条，共 {total} 条", "en": "{first}–{last} of {total}"},
    "none": {"zh": "无。", "en": "None."},
    "item_title": {"zh": "条目 {id}", "en": "Item {id}"},
    "item_actions": {"zh": "修改", "en": "Correct it"},
    "item_provenance": {"zh": "来源（证据和前后的对话）", "en": "Where it came from"},
    "item_audit": {"zh": "修改记录", "en": "Audit trail"},
    "item_chain": {"zh": "替换链", "en": "Supersede chain"},
    "later": {"zh": "被它替换", "en": "Replaced by"},
    "earlier_item": {"zh": "它替换了", "en": "Replaced"},
    "before": {"zh": "之前", "en": "before"},
    "after": {"zh": "之后", "en": "after"},
    "edit_text": {"zh": "新的内容", "en": "New words"},
    "edit_button": {"zh": "保存修改", "en": "Save the edit"},
    "change_button": {"zh": "修改种类/范围/公开性", "en": "Change kind, scope, sensitivity"},
    "forget_button": {"zh": "遗忘（归档）", "en": "Forget (archive)"},
    "forget_confirm": {"zh": "确定遗忘这条记忆？", "en": "Forget this memory?"},
    "restore_button": {"zh": "恢复", "en": "Restore"},
    "purge_button": {"zh": "彻底删除", "en": "Purge"},
    "purge_type": {
        "zh": "彻底删除无法撤销：输入条目编号 {id} 以确认",
        "en": "Purging cannot be undone: type the item id {id} to confirm",
    },
    "purge_confirm": {"zh": "彻底删除这条记忆？无法撤销。", "en": "Purge this memory for good?"},
    "item_purged": {"zh": "条目 {id} 已彻底删除。", "en": "Item {id} was purged."},
    "item_gone": {"zh": "没有这个条目，或它不能这样修改。", "en": "No such item for this action."},
    "refused": {"zh": "没有完成：{error}", "en": "Not done: {error}"},
    "done_edit": {"zh": "已保存修改。", "en": "Edited."},
    "done_change": {"zh": "已修改。", "en": "Changed."},
    "done_forget": {"zh": "已遗忘（归档）。", "en": "Forgotten (archived)."},
    "done_restore": {"zh": "已恢复。", "en": "Restored."},
    "review_intro": {
        "zh": "暂缓写入的记忆和做梦提出的改动。删掉的字和新加的字分别标出。",
        "en": "Memories held back and a dream's changes to items, with the words deleted and"
        " inserted marked.",
    },
    "review_none": {"zh": "没有等待审核的内容。", "en": "Nothing waits for review."},
    "review_done": {"zh": "已处理 {count} 项。", "en": "Decided {count}."},
    "review_chosen": {"zh": "勾选的几项：", "en": "The ones ticked:"},
    "accept_button": {"zh": "接受", "en": "Accept"},
    "reject_button": {"zh": "拒绝", "en": "Reject"},
    "edit_accept_button": {"zh": "修改后接受", "en": "Edit, then accept"},
    "people_title": {"zh": "机器人认识的人", "en": "The people the bot knows"},
    "people_none": {"zh": "还没有认识的人。", "en": "Nobody yet."},
    "col_names": {"zh": "名字和昵称", "en": "Names and nicknames"},
    "col_turns": {"zh": "发言数", "en": "Turns"},
    "col_last_seen": {"zh": "最近出现", "en": "Last seen"},
    "person_title": {"zh": "人物 {user}", "en": "Person {user}"},
    "person_profile": {
        "zh": "画像（每行一条；清空即删除这一节）",
        "en": "Profile (a bullet a line; empty a section to clear it)",
    },
    "person_rules": {"zh": "行为规则", "en": "Behavioural rules"},
    "person_items": {"zh": "与此人有关的记忆（所有范围）", "en": "Their items, in every scope"},
    "person_episodes": {"zh": "片段", "en": "Episodes"},
    "save_section": {"zh": "保存这一节", "en": "Save this section"},
    "done_profile": {"zh": "画像已保存。", "en": "Profile saved."},
    # end of items, review and people
    # overview, chats, dreams (activity.py) ----------------------------------------------------
    "pager": {"zh": "翻页", "en": "Pages"},
    "pager_prev": {"zh": "← 上一页", "en": "← Previous"},
    "pager_next": {"zh": "下一页 →", "en": "Next →"},
    "pager_rows": {
        "zh": "第 {first}–{last} 行，共 {total} 行",
        "en": "rows {first}–{last} of {total}",
    },
    "col_day": {"zh": "日期", "en": "Day"},
    "overview_title": {"zh": "记忆概览", "en": "Memory at a glance"},
    "overview_warnings": {"zh": "需要注意", "en": "Warnings"},
    "count_items": {"zh": "记忆条目", "en": "Memories"},
    "count_people": {"zh": "人物", "en": "People"},
    "count_chats": {"zh": "聊天", "en": "Chats"},
    "count_sessions": {"zh": "会话", "en": "Sessions"},
    "count_turns": {"zh": "聊天记录", "en": "Turns"},
    "count_pending": {"zh": "待审核", "en": "Pending review"},
    "overview_by_kind": {"zh": "按种类", "en": "By kind"},
    "overview_by_family": {"zh": "按范围", "en": "By scope"},
    "overview_by_status": {"zh": "按状态", "en": "By status"},
    "overview_days": {"zh": "最近 {days} 天", "en": "The last {days} days"},
    "chart_added": {"zh": "每天新增的记忆（按来源）", "en": "Memories added per day, by source"},
    "chart_recalls": {"zh": "每天回忆命中", "en": "Recall hits per day"},
    "chart_dreams": {"zh": "每天做梦的提议（按结果）", "en": "Dream proposals per day, by fate"},
    "family_said": {"zh": "用户说的", "en": "said"},
    "family_extracted": {"zh": "提取的", "en": "extracted"},
    "family_dreamed": {"zh": "梦到的", "en": "dreamed"},
    "family_edited": {"zh": "编辑的", "en": "edited"},
    "family_imported": {"zh": "导入的", "en": "imported"},
    "family_other": {"zh": "其他", "en": "other"},
    "recall_hits": {"zh": "命中", "en": "hits"},
    "fate_applied": {"zh": "已采用", "en": "applied"},
    "fate_pending": {"zh": "待审核", "en": "pending"},
    "fate_rejected": {"zh": "已拒绝", "en": "rejected"},
    "overview_backlog": {"zh": "向量索引积压", "en": "Embedding backlog"},
    "backlog_stored": {"zh": "已有向量", "en": "stored"},
    "backlog_pending": {"zh": "等待中", "en": "pending"},
    "backlog_other": {"zh": "旧模型的向量", "en": "of another model"},
    "backlog_skipped": {"zh": "太短而跳过", "en": "skipped (too short)"},
    "backlog_off": {
        "zh": "未启用语义检索（memory.embedding.backend: none）。",
        "en": "Recall by meaning is off (memory.embedding.backend: none).",
    },
    "backlog_unknown": {
        "zh": "检查尚未完成，稍后刷新即可看到积压。",
        "en": "The checks have not finished yet; reload in a moment to see the backlog.",
    },
    "overview_jobs": {"zh": "后台任务（最近一次）", "en": "Background jobs (latest run)"},
    "overview_no_jobs": {"zh": "还没有后台任务运行过。", "en": "No background job has run yet."},
    "col_job": {"zh": "任务", "en": "Job"},
    "col_outcome": {"zh": "结果", "en": "Outcome"},
    "col_counts": {"zh": "数量", "en": "Counts"},
    "chats_title": {"zh": "有记录的聊天", "en": "Chats with history"},
    "chats_none": {"zh": "还没有聊天记录。", "en": "No chat has history yet."},
    "col_chat": {"zh": "聊天", "en": "Chat"},
    "col_sessions": {"zh": "会话", "en": "Sessions"},
    "col_last_active": {"zh": "最近活跃", "en": "Last active"},
    "col_dreaming": {"zh": "做梦", "en": "Dreaming"},
    "col_session": {"zh": "会话", "en": "Session"},
    "dream_paused": {"zh": "已暂停", "en": "paused"},
    "dream_active": {"zh": "进行中", "en": "on"},
    "dream_through": {"zh": "读到第 {turn} 条", "en": "read through turn {turn}"},
    "chat_summary": {
        "zh": "{sessions} 个会话，{turns} 条记录，最近 {last}",
        "en": "{sessions} sessions, {turns} turns, last {last}",
    },
    "chat_dreaming": {"zh": "做梦", "en": "Dreaming"},
    "chat_sessions": {"zh": "会话", "en": "Sessions"},
    "chat_rules": {"zh": "规则", "en": "Rules"},
    "chat_dreams": {"zh": "最近的做梦", "en": "Latest dream runs"},
    "all_runs": {"zh": "全部做梦记录", "en": "All runs"},
    "all_chats": {"zh": "所有聊天", "en": "All chats"},
    "steer_pause": {"zh": "暂停做梦", "en": "Pause dreaming"},
    "steer_resume": {"zh": "恢复做梦", "en": "Resume dreaming"},
    "steer_run": {"zh": "现在做梦", "en": "Dream now"},
    "steer_run_confirm": {
        "zh": "现在让模型整理这个聊天的新记录？这会花一些时间和词元。",
        "en": "Have the model consolidate this chat's new turns now? It takes a while and tokens.",
    },
    "steer_paused": {"zh": "这个聊天的做梦已暂停。", "en": "Dreaming is paused in this chat."},
    "steer_resumed": {"zh": "这个聊天的做梦已恢复。", "en": "Dreaming is resumed in this chat."},
    "steer_started": {
        "zh": "做梦已在后台开始；结束后会出现在做梦记录里。",
        "en": "A dream run started in the background; it shows under the runs when done.",
    },
    "steer_no_model": {
        "zh": "没有配置做梦用的模型（models.dream 或 models.chat）。",
        "en": "No model is configured for dreaming (models.dream or models.chat).",
    },
    "dream_counts": {
        "zh": "{proposals} 个提议：采用 {applied}，待审 {pending}，拒绝 {rejected}",
        "en": "{proposals} proposals: {applied} applied, {pending} pending, {rejected} rejected",
    },
    "turn_hidden": {"zh": "（回忆时隐藏）", "en": "(hidden from recall)"},
    "recalled": {"zh": "回忆了 {n} 条", "en": "{n} recalled"},
    "gone": {"zh": "（已删除）", "en": "(gone)"},
    "dreams_title": {"zh": "做梦记录", "en": "Dream runs"},
    "dreams_none": {"zh": "还没有做梦记录。", "en": "No dream run yet."},
    "col_proposals": {"zh": "提议", "en": "Proposals"},
    "dream_title": {"zh": "{time} 的做梦", "en": "Dream run of {time}"},
    "dream_turns": {"zh": "读过的记录", "en": "Turns read"},
    "dream_model": {"zh": "模型 · 调用 · 词元", "en": "Model · calls · tokens"},
    "dream_ops": {"zh": "提议和结果", "en": "Proposals and their fates"},
    "col_op": {"zh": "操作", "en": "Op"},
    "col_fate": {"zh": "结果", "en": "Fate"},
    "col_why": {"zh": "拒绝原因", "en": "Why rejected"},
    # refusals
    "csrf_refused": {
        "zh": "请求没有通过校验（CSRF）。请刷新页面再试。",
        "en": "The request failed its CSRF check. Reload the page and try again.",
    },
}


def t(key: str, lang: Language = "zh", **values: object) -> str:
    text = MESSAGES[key][lang]
    return text.format(**values) if values else text


def language(value: object) -> Language | None:
    """`value` as a language the console speaks, or None."""
    for known in LANGUAGES:
        if value == known:
            return known
    return None
