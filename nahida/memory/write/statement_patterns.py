"""The patterns of the statement rules (`statements.RULES`): regular expressions, matched
case-insensitively at a clause start, after filler words. Named groups: `v` (value), `o`
(object), `d`, `verb`, `e`, `n`, `p`, `neg` and their stand-ins `x2` (see `statements.Rule`)."""

from __future__ import annotations

REMEMBER_ZH = (
    r"(?:请你?|你要|你得|帮我|麻烦你?|给我)?(?:记住|记下来|记下|记一下)(?:了|哦)?"
    r"[，,:：\s]*(?P<v>.+)"
)
REMEMBER_EN = (
    r"(?:please\s+)?(?:remember|keep in mind)(?:\s+that)?\s*[:,]?\s+"
    r"(?!(?:when|how|what|who|where|why|the time|to|me|you)\b)(?P<v>.+)"
)
NICK_ZH = (  # "叫我小北就行", "你可以叫我阿杰", "以后叫我老王" (not "叫我起床")
    r"(?=.*(?:以后|今后|可以|就好|就行|就可以|好了))(?:(?:以后|今后)[，,\s]*)?(?:你们?|大家)?都?"
    r"(?:可以|就)?(?:直接)?(?:叫|喊|称呼)我\s*(?!起床|吃饭|一声|一下|过去|回来|出去|起来|出来)"
    r"(?![去来吃喝干做帮陪睡别不起回出])(?P<v>[^\s，,]{1,6}?)(?:就(?:好|行|可以)了?|好了|吧)?"
)
NICK_EN = (  # "you can call me Sam", "I go by Alex" (not "call me when you land")
    r"(?:(?:(?:you can|you may|please|just|everyone|pls)\s+)+(?:just\s+)?call me|i\s+go\s+by)\s+"
    r"(?P<v>(?-i:[A-Z])[\w'-]{1,20}(?:\s+(?-i:[A-Z])[\w'-]{1,20})?)"
    r"(?:\s+(?:instead|for short|from now on|going forward|please))*"
)
DECIDED_I = r"(?:我决定|i(?:'ve| have)? decided)(?:\s+that|\s+to)?[，,:：\s]*(?P<v>.+)"
DECIDED_ZH = (
    r"(?:从现在起|从现在开始|从今天起|从今天开始|从今以后|(?:我们|咱们|大家)决定(?:了)?|决定了|说好了)"
    r"[，,:：\s]*(?P<v>.+)"
)
FROM_NOW_ZH = (
    r"(?:以后|今后)[，,\s]*(?=我们|咱们|大家|你|请|都|每|统一|一律|不要|别|不许|禁止|记得|一直|总是"
    r"|尽量|只)(?P<v>.+)"
)
DECIDED_EN = (
    r"(?:from now on|going forward|from today on|we(?:'ve| have)? (?:decided|agreed)(?: that| to)?"
    r"|let'?s always|let'?s never|let us always)[,:\s]*(?P<v>.+)"
)
WHEN_ZH = (  # "每天早上提醒我喝水", "明天记得提醒我…": the time belongs to the task
    r"(?P<t>(?:每天|每周[一二三四五六日天]?|每个?月|每晚|明天|后天|今晚|今天|晚上|早上|下午|中午"
    r"|周[一二三四五六日天末]|下周[一二三四五六日天]?)[^，,提记]{0,8}?)?"
)
REMIND_ZH = WHEN_ZH + r"(?:记得)?提醒我(?:一下)?[，,:：\s]*(?P<v>.+)"
FORGET_ZH = r"(?:别|不要)忘(?:了|记)?[，,:：\s]*(?P<v>.+)"
TODO = r"(?:待办(?:事项)?|todo|to-do)\s*[:：]\s*(?P<v>.+)"
REMIND_EN = r"remind me(?:\s+to|\s+that|\s+about)?\s+(?P<v>.+)"
FORGET_EN = r"(?:(?:don'?t|do not)\s+(?:let me\s+)?forget|remember)(?:\s+to|\s+about)?\s+(?P<v>.+)"
NAME_ZH = r"我的?名字(?:是|叫)\s*(?P<v>\S{1,8})"
CALLED_ZH = r"我叫\s*(?P<v>\S{1,6})"
NAME_EN = r"my name(?:'s| is)\s+(?P<v>\w[\w'-]*(?:\s+[A-Z][\w'-]*){0,3})"
PLACE_EN = r"(?-i:[A-Z])[\w'-]*(?:\s+(?-i:[A-Z])[\w'-]*){0,3}"  # capitalised words: "New York"
HOME_ZH = r"我(?:现在)?(?:住在|家在|坐标)\s*(?P<v>.{2,30})"  # 坐标: QQ for "I'm in"
MOVED_ZH = r"我(?:刚|已经|最近|去年|今年)*(?:搬到|搬去|搬来)了?(?P<v>[^\s，,]{2,30}?)住?"
HOME_EN = r"i(?:\s+currently|\s+now)?\s+live\s+in\s+(?P<v>.{2,60})"
MOVED_EN = (
    rf"i(?:'m| am)\s+(?:now\s+)?based\s+in\s+(?P<v>{PLACE_EN})"
    rf"|i(?:\s+just|\s+recently)?\s+moved\s+to\s+(?P<v2>{PLACE_EN})"
    r"(?:\s+(?:last|this|a|two|three|in|recently)\b.*)?"
)
BIRTHDAY_ZH = r"我的?生日(?:是|在)\s*(?P<v>.{2,30})"
DATE_ZH = r"\d{1,2}月\d{1,2}[日号]|[一二三四五六七八九十]{1,3}月[一二三四五六七八九十]{1,3}[日号]"
BIRTHDAY_ON_ZH = rf"我(?:是|的)?(?P<v>{DATE_ZH})的?生日|我的?生日\s*(?P<v2>{DATE_ZH})"
BIRTHDAY_EN = r"my birthday is\s+(?P<v>.{2,40})"
BORN_ZH = r"我(?:是)?(?P<v>\d{2}|\d{4}|[零〇一二三四五六七八九]{2,4})年(?:生|出生)?的?"  # 95年的
GENDER_ZH = r"我(?:是)?(?:个|一个)?(?P<v>女|男)(?:生|的|孩子?)?"  # "本人女"
AGE_ZH = r"我(?:今年|现在|已经)*(?P<v>\d{1,3}|[一二两三四五六七八九十]{1,3})周?岁"
AGE_EN = r"i(?:'m| am)\s+(?P<v>\d{1,3})(?:\s+years?\s+old|\s+yrs?\s+old|\s*y/?o)?"
HOMETOWN_ZH = (  # "我是杭州人", not "我是好人", "我是有原则的人"
    r"我是(?!一个|个|好|坏|普通|正常|成年|年轻|老实|文化|文明|明白|外星|机器|有钱|穷|懒|社恐|路|纯"
    r"|局外|自己|中年|老年|主持|负责|联系|介绍|经纪|病|男|女|大|小|老|新|本|外|你|他|她|这|那|什么|哪"
    r"|过来|工具|打工|读书|有福|好心|明眼|圈内|圈外|门外|夜猫|急性)(?P<v>(?:(?!的)[\u4e00-\u9fff]){2,4}?)人"
)
OLD_HOME_ZH = r"我的?老家(?P<verb>是|在)(?P<v>[^\s，,]{1,15}?)"
FROM_ZH = r"我(?:来自|是从)(?P<v>[^\s，,]{2,15}?)(?:来的)?"
FROM_EN = (
    rf"i(?:'m| am)\s+(?:originally\s+)?from\s+(?P<v>{PLACE_EN})(?:\s+originally)?"
    rf"|i\s+grew\s+up\s+in\s+(?P<v2>{PLACE_EN})"
)
ROLES_ZH = (
    r"工程师|程序员|程序猿|码农|老师|教师|医生|护士|设计师|学生|研究生|博士生|博士|本科生|大学生|高中生"
    r"|初中生|律师|会计|产品经理|运营|销售|厨师|司机|警察|作家|画师|插画师|主播|公务员|自由职业者?|前端"
    r"|后端|全栈|测试|翻译|记者|编辑|研究员|分析师|架构师|实习生|财务|创业者|主管|店长|咨询师|建筑师"
    r"|药剂师|兽医|牙医|摄影师|演员|UP主"
)
JOB_ZH = (  # "我是一名护士", "我是大三学生", not "我是你爹"
    r"我(?:现在|目前|已经|本职)?(?:是|当)(?:一名|一个|一位|名|个|位)?"
    rf"(?P<v>[^\s，,]{{0,8}}?(?:{ROLES_ZH}))"
)
TRADE_ZH = r"我(?:现在|目前)?是(?P<verb>做|搞|干)(?!梦)(?P<v>[^\s，,]{2,10}?)的?"  # 是做设计的
WORKPLACE_ZH = (
    r"我(?:现在|目前|一直|已经)?在(?!家|努力|认真|拼命|好好|偷偷|忙着|找)(?P<v>[^\s，,]{1,15}?)"
    r"(?P<verb>工作|上班|实习|打工|任职)"
)
ROLES_EN = (
    r"nurse|engineer|developer|dev|programmer|coder|teacher|doctor|physician|student|designer"
    r"|lawyer|accountant|manager|chef|cook|writer|artist|researcher|scientist|consultant|analyst"
    r"|dentist|pharmacist|architect|musician|photographer|journalist|professor|lecturer|intern"
    r"|freelancer|barista|pilot|firefighter|police officer|vet|veterinarian|translator|editor"
    r"|tester|sysadmin|sre|undergrad|postdoc|electrician|plumber|mechanic|cashier|waiter"
    r"|waitress|driver|therapist|psychologist|librarian"
)
JOB_EN = (  # "I'm a nurse", "I'm a software engineer at a startup", not "I'm a bit tired"
    r"i(?:'m| am)\s+(?:currently\s+|now\s+)?(?P<a>an?)\s+"
    rf"(?P<v>(?:[\w-]+\s+){{0,3}}?(?:{ROLES_EN})(?:\s+(?:at|in|for)\s+.{{1,40}})?)"
)
WORK_AS_EN = r"i\s+(?:currently\s+|now\s+)?work\s+as\s+(?P<a>an?)\s+(?P<v>.{2,60})"
WORK_AT_EN = r"i\s+(?:currently\s+|now\s+)?work\s+(?P<verb>at|for)\s+(?P<v>.{2,60})"
NOT_KIN = (  # "我妈…", "我老婆…": someone else's
    r"(?!妈|爸|老婆|老公|对象|女朋友|男朋友|女儿|儿子|孩子|家|们|朋友|同事|弟|妹|哥|姐|爷|奶|外公|外婆)"
)
ALLERGY_ZH = (  # "我对花生过敏", "我吃芒果会过敏"
    r"我(?:也|还|从小就?|一直|有点)*(?:对|吃|一吃|碰|一碰|闻)(?P<o>[^\s，,]{1,15}?)"
    r"(?:就|会|也|都|有点|有些|比较|特别|非常|很|严重|轻微)*(?P<neg>不)?过敏"
)
ALLERGY_BARE_ZH = (  # "我海鲜过敏", not "我老婆对花生过敏"
    rf"我{NOT_KIN}(?!是|不是|有点|也|对|吃)(?P<o>[^\s，,]{{1,8}}?)(?:也|有点|比较|特别|严重|轻微)*"
    r"(?P<neg>不)?过敏"
)
ALLERGY_EN = (
    r"i(?:'m| am)\s+(?P<neg>not\s+)?(?:(?:very|really|severely|mildly|a bit|slightly|deathly|super"
    r"|also|so)\s+)*allergic\s+to\s+(?P<o>.{1,40})"
    r"|i\s+have\s+an?\s+(?:(?:severe|mild|bad|slight)\s+)?(?P<o2>[\w -]{1,30}?)\s+allergy"
)
HEALTH_ZH = (
    r"我(?:也|还|一直|从小就?|有点|有|比较|很|特别|严重|轻微)*是?(?P<v>晕车|晕船|晕机|恐高|近视(?:\d{2,4}度)?"
    r"|远视|散光|色弱|色盲|乳糖不耐受?|低血糖|高血压|糖尿病|哮喘|鼻炎|痛风|胃病|胃不好|路痴|怕冷|怕热"
    r"|左撇子)"
)
HEALTH_EN = (
    r"i(?:'m| am)\s+(?P<v>diabetic|lactose intolerant|colou?r ?blind|left-handed|right-handed"
    r"|asthmatic|short-sighted|near-sighted|epileptic|hard of hearing)"
    r"|i\s+get\s+(?P<v2>(?:car|sea|air|motion\s*)sick(?:\s+easily)?)"
)
VEGETARIAN_ZH = (
    r"我(?:现在|已经|一直|平时)?是?(?:一个|个|一名)?(?:吃素的?|素食主义者|纯?素食者|素食)"
)
VEGETARIAN_EN = (
    r"i(?:'m| am|'ve been| have been)\s+(?:a\s+)?(?:(?:strict|full|total)\s+)?"
    r"(?P<v>vegetarian|vegan|pescatarian)(?:\s+(?:for|since)\s+.{1,30})?"
)
DIET_ADV_ZH = r"(?:现在|平时|一般|从小就?|向来|已经|基本上?|根本|完全|也|都|还|真的?|其实|一直)*"
DIET_ZH = (  # "我不吃香菜", "我从来不喝酒", "我能吃辣" (a taste, not "我能吃三碗饭")
    rf"我{DIET_ADV_ZH}(?:(?P<neg>不太能|不怎么|不能|不敢|从不|从来不|不再|再也不|一点都不|一点也不|不)"
    r"(?P<e>吃|喝|碰|沾|抽)(?P<o>[^\s，,]{1,20})|(?P<neg2>很能|挺能|特别能|超能|能)(?P<e2>吃)"
    r"(?P<o2>(?:辣|酸|甜|苦|咸|麻|辛辣|重口|生冷)的?))"
)
DIET_CANT_ZH = rf"我{DIET_ADV_ZH}(?P<e>吃|喝)(?P<neg>不了|不惯|不下)(?P<o>[^\s，,]{{1,20}})"
DIET_EN = (
    r"i\s+(?:(?:really|just|also|usually|generally|basically|honestly)\s+)*(?P<neg>don'?t|do not"
    r"|can'?t|cannot|never|no longer|won'?t)\s+(?P<e>eat|drink)\s+(?P<o>.{1,40})"
)
ANIMALS_ZH = (
    r"猫咪|猫猫|猫|狗狗|狗|兔子|兔|仓鼠|鹦鹉|乌龟|龟|金鱼|鱼|金毛|柯基|哈士奇|柴犬|泰迪|龙猫|刺猬|蜥蜴"
    r"|蛇|鸟"
)
PET_ZH = (  # "我养了一只猫", "我养了条柯基", "我家有两只狗" (not "我有一个问题")
    r"我(?:家里?|们家)?(?:现在|也|还)?(?:(?P<verb>养了|养着|养)(?P<n>[一二两三四五六七八九十几\d]*)"
    r"(?P<m>只|条|头|匹|个|缸)(?P<o>[^\s，,]{1,8})|(?P<verb2>有)(?P<n2>[一二两三四五六七八九十几\d]+)"
    rf"(?P<m2>只|条|头|匹)(?P<o2>[^\s，,]{{0,4}}?(?:{ANIMALS_ZH})))"
)
PET_NAME_ZH = (
    rf"我(?:家|们家)?(?:的|家的)?(?P<o>{ANIMALS_ZH})(?:叫|名叫|的名字叫|的名字是|名字叫|名字是)"
    r"(?P<v>[^\s，,]{1,8})"
)
PETS_EN = (
    r"cat|dog|puppy|kitten|rabbit|bunny|hamster|parrot|turtle|tortoise|goldfish|fish|snake|lizard"
    r"|guinea pig|corgi|husky|beagle|poodle|labrador|retriever|shiba"
)
PET_EN = (
    r"i(?:\s+have|'ve got|\s+have got|\s+own)\s+(?P<n>an?|one|two|three|four|five|\d+)\s+"
    rf"(?P<o>(?:[\w-]+\s+)?(?P<p>{PETS_EN})(?:s|es)?)"
)
PET_NAME_EN = (
    rf"my\s+(?P<o>{PETS_EN})(?:'s name is|\s+is called|\s+is named|\s+named)\s+"
    r"(?P<v>[\w'-]{2,20})"
)
LEARNING_ZH = (  # "我最近在学吉他", not "我在学校门口"
    r"我(?:最近|现在|目前|这阵子|这段时间|今年|每天|一直|也|还)*(?P<verb>正在学习|在学习|正在自学|在自学"
    r"|正在学|在学|开始学习|开始自学|开始学)(?![校院长姐妹弟生霸期费分位历习])(?P<o>[^\s，,]{1,15})"
)
LEARNING_EN = (
    r"i(?:'m| am|'ve been| have been|\s+(?:just\s+)?started)\s+(?:(?:currently|now|still|also)\s+)?"
    r"learning\s+(?!(?:a lot|lots|so much|a bunch|from|that|this)\b)(?P<o>.{2,40})"
)
MY_ATTRIBUTE_ZH = (  # "我的邮箱是…", "我的 UID 是…"; not opinions, secrets or someone else
    r"我的\s*(?!意思|想法|建议|问题|理解|看法|观点|感觉|猜测|答案|回答|理由|意见|天|妈|错|锅|老婆|老公"
    r"|对象|女朋友|男朋友|女儿|儿子|孩子|朋友|同事|爸|哥|姐|弟|妹|最爱|最喜欢)"
    r"(?P<o>(?:(?!密码|口令|password|token|key)[^\s，,的是：:]){1,10}?)"
    r"\s*(?:是|叫|:|：|\s(?=[a-z0-9@]))\s*(?P<v>[^\s，,].{0,40})"
)
# "我现在不喜欢…", "我平时喜欢…": as of now, not part of what is liked
NOW_ZH = r"(?:现在|如今|目前|已经|其实|还是|平时|一般|本来|向来|从小就?|这几年|最近)*"
FAVOURITE_ZH = r"我最(?P<verb>喜欢|爱)的(?P<o>.{1,12}?)(?:就是|是)(?P<v>.{1,30})"
FAVOURITE_EN = r"my (?:fav(?:ou?rite)|fave)\s+(?P<o>[\w ]{1,30}?)\s+is\s+(?P<v>.{1,40})"
FAN_EN = (  # "I'm a big fan of X", "I'm a huge Arsenal fan", "I'm not a morning person"
    r"i(?:'m| am)\s+(?P<neg>not\s+)?an?\s+(?P<d>(?:(?:big|huge|great|massive|die-hard|real)\s+)*)"
    r"(?:fan\s+of\s+(?P<o>.{1,60})|(?P<o2>(?!(?:bit|lot|little|few|big|huge|great)\b)[\w'-]+"
    r"(?:\s+[\w'-]+)?)\s+(?P<kind>fan|person))"
)
PREF_ZH = (
    rf"我{NOW_ZH}(?P<d>(?:也|还|真的?|很|挺|超级?|特别|非常|比较|蛮|一直|都|最|更|贼|巨|越来越)*)"
    r"(?P<verb>不太喜欢|不怎么喜欢|不喜欢|不爱|喜欢上了|喜欢上|喜欢|爱上了|爱上|爱|讨厌|受不了|偏爱)"
    r"(?!(.)不\1)(?P<o>.{1,40})"  # not "我爱吃不吃"
)
DISLIKE_ZH = r"(?P<verb>讨厌|受不了)(?P<o>.{1,40})"
PREF_EN = (
    r"i\s+(?P<d>(?:(?:really|truly|totally|absolutely|also|still|just|kinda|do)\s+)*)"
    r"(?P<verb>don'?t\s+(?:really\s+)?like|do\s+not\s+(?:really\s+)?like|can'?t\s+stand|like|love"
    r"|prefer|enjoy|hate|dislike|adore)\s+(?P<o>.{1,60})"
)
