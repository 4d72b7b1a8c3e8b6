//! Neutral topics for general prompts, in English and Chinese, each with a few plain sentences the
//! programmatic teacher builds its answers from. Train and eval topics are disjoint, so IFEval-lite
//! measures following instructions about things the model was not trained to write about.
//!
//! English sentences carry no commas and Chinese ones only full-width `，`: `punctuation:no_comma` then
//! holds for any answer built from them, and the teacher has one rule less to enforce.

/// One topic: its name and sentences in each language, and two keywords that occur in neither.
pub struct Topic {
    pub en: &'static str,
    pub zh: &'static str,
    pub en_sentences: &'static [&'static str],
    pub zh_sentences: &'static [&'static str],
    /// Words a `keywords:existence` instruction may ask for.
    pub en_keywords: &'static [&'static str],
    pub zh_keywords: &'static [&'static str],
}

/// Words `keywords:forbidden_words` may forbid: none occurs in any topic sentence (a test checks).
pub const EN_FORBIDDEN: &[&str] = &["very", "really", "stuff", "thing", "basically", "awesome"];
pub const ZH_FORBIDDEN: &[&str] = &["非常", "东西", "其实", "基本上", "超级"];

macro_rules! topic {
    ($en:expr, $zh:expr, [$($es:expr),+], [$($zs:expr),+], [$($ek:expr),+], [$($zk:expr),+]) => {
        Topic { en: $en, zh: $zh, en_sentences: &[$($es),+], zh_sentences: &[$($zs),+],
                en_keywords: &[$($ek),+], zh_keywords: &[$($zk),+] }
    };
}

/// Topics of the train split.
pub const TRAIN: &[Topic] = &[
    topic!(
        "tea",
        "茶",
        [
            "Tea is made by steeping dried leaves in hot water.",
            "Green tea is picked and heated quickly to keep its colour.",
            "Black tea is left to oxidise before it is dried.",
            "Many people drink tea in the morning to wake up.",
            "Good tea tastes best when the water is not boiling."
        ],
        [
            "茶是用热水冲泡干茶叶做成的。",
            "绿茶采摘后很快杀青，颜色保持翠绿。",
            "红茶在干燥之前要经过发酵。",
            "很多人早上喝茶提神。",
            "水温不要太高，茶的味道会更好。"
        ],
        ["leaves", "kettle", "aroma"],
        ["茶叶", "茶杯", "香气"]
    ),
    topic!(
        "bicycles",
        "自行车",
        [
            "A bicycle turns the push of your legs into motion.",
            "Two wheels and a light frame make it easy to carry.",
            "Riding to work saves money and keeps you fit.",
            "A chain links the pedals to the back wheel.",
            "Good brakes matter more than a fast gear."
        ],
        [
            "自行车把双腿的力量变成前进的动力。",
            "两个轮子加上轻巧的车架，搬运很方便。",
            "骑车上班既省钱又锻炼身体。",
            "链条把脚踏和后轮连在一起。",
            "好的刹车比快的变速更重要。"
        ],
        ["pedal", "helmet", "route"],
        ["脚踏", "头盔", "路线"]
    ),
    topic!(
        "rain",
        "雨",
        [
            "Rain forms when water in clouds grows heavy enough to fall.",
            "A light rain can cool a hot summer street.",
            "Farmers wait for rain in the dry season.",
            "The sound of rain on a roof helps many people sleep.",
            "After a storm the air often smells fresh and clean."
        ],
        [
            "云里的水滴变重以后就落下来成了雨。",
            "一场小雨能让炎热的街道凉快下来。",
            "旱季里农民盼着下雨。",
            "雨打在屋顶上的声音让很多人睡得更香。",
            "暴雨过后空气常常清新干净。"
        ],
        ["umbrella", "puddle", "cloud"],
        ["雨伞", "水洼", "云朵"]
    ),
    topic!(
        "libraries",
        "图书馆",
        [
            "A library lends books to anyone with a card.",
            "Quiet rooms give readers space to think.",
            "Librarians help people find what they need.",
            "Many libraries now lend music and films too.",
            "A small town library is often a place to meet."
        ],
        [
            "图书馆把书借给持有借书证的人。",
            "安静的阅览室给读者思考的空间。",
            "图书管理员帮人找到需要的资料。",
            "现在很多图书馆也借出音乐和电影。",
            "小镇的图书馆常常是大家见面的地方。"
        ],
        ["shelf", "catalogue", "reader"],
        ["书架", "目录", "读者"]
    ),
    topic!(
        "baking bread",
        "烤面包",
        [
            "Bread needs flour and water and salt and yeast.",
            "The yeast makes the dough rise over a few hours.",
            "Kneading builds the structure that holds the air.",
            "A hot oven gives the loaf a dark crisp crust.",
            "Fresh bread should cool before you cut it."
        ],
        [
            "面包需要面粉、水、盐和酵母。",
            "酵母让面团在几个小时里发起来。",
            "揉面能形成留住空气的筋度。",
            "高温的烤箱让面包烤出深色酥脆的外皮。",
            "刚出炉的面包要放凉再切。"
        ],
        ["dough", "oven", "crust"],
        ["面团", "烤箱", "外皮"]
    ),
    topic!(
        "the night sky",
        "夜空",
        [
            "On a clear night you can see thousands of stars.",
            "The moon changes shape over about four weeks.",
            "Planets move slowly against the fixed stars.",
            "City lights hide the faint stars from view.",
            "A small telescope shows the rings of Saturn."
        ],
        [
            "晴朗的夜晚能看到成千上万颗星星。",
            "月亮的形状大约四周变化一轮。",
            "行星在恒星背景上缓缓移动。",
            "城市的灯光让暗淡的星星看不见。",
            "一架小望远镜就能看到土星的光环。"
        ],
        ["planet", "moon", "orbit"],
        ["行星", "月亮", "轨道"]
    ),
    topic!(
        "gardening",
        "园艺",
        [
            "A garden needs sun and water and good soil.",
            "Seeds planted in spring grow fast in the warm months.",
            "Weeds compete with young plants for water.",
            "Compost turns kitchen scraps into food for the soil.",
            "Tomatoes and beans are easy for a first garden."
        ],
        [
            "花园需要阳光、水分和好的土壤。",
            "春天播下的种子在温暖的月份长得很快。",
            "杂草会和幼苗争夺水分。",
            "堆肥把厨余变成土壤的养料。",
            "番茄和豆子适合第一次种菜的人。"
        ],
        ["seed", "soil", "harvest"],
        ["种子", "土壤", "收获"]
    ),
    topic!(
        "chess",
        "国际象棋",
        [
            "Chess is played on a board of sixty four squares.",
            "Each side starts with sixteen pieces.",
            "The game ends when a king cannot escape capture.",
            "Players plan several moves ahead.",
            "Short daily practice improves a player more than long rare sessions."
        ],
        [
            "国际象棋在六十四格的棋盘上进行。",
            "双方各有十六枚棋子。",
            "一方的王无法逃脱被吃时棋局结束。",
            "棋手要提前计划好几步。",
            "每天短时间练习比偶尔长时间练习进步更快。"
        ],
        ["knight", "opening", "board"],
        ["骑士", "开局", "棋盘"]
    ),
    topic!(
        "winter",
        "冬天",
        [
            "Winter brings the shortest days of the year.",
            "Snow covers the fields in colder places.",
            "People wear layers to stay warm outside.",
            "Many animals sleep through the cold months.",
            "A warm drink tastes better on a winter evening."
        ],
        [
            "冬天有一年里最短的白天。",
            "在寒冷的地方雪会覆盖田野。",
            "人们出门时穿好几层衣服保暖。",
            "很多动物在寒冷的月份冬眠。",
            "冬天的晚上喝一杯热饮格外舒服。"
        ],
        ["snow", "scarf", "frost"],
        ["雪花", "围巾", "霜冻"]
    ),
    topic!(
        "bees",
        "蜜蜂",
        [
            "Bees carry pollen from flower to flower.",
            "A hive can hold tens of thousands of bees.",
            "The queen lays the eggs for the whole colony.",
            "Worker bees make honey from the nectar they collect.",
            "Many crops depend on bees to bear fruit."
        ],
        [
            "蜜蜂把花粉从一朵花带到另一朵花。",
            "一个蜂巢里可以有几万只蜜蜂。",
            "蜂王为整个蜂群产卵。",
            "工蜂用采来的花蜜酿蜂蜜。",
            "很多农作物要靠蜜蜂授粉才能结果。"
        ],
        ["hive", "nectar", "pollen"],
        ["蜂巢", "花蜜", "花粉"]
    ),
    topic!(
        "trains",
        "火车",
        [
            "Trains carry many people at once on steel rails.",
            "A long journey by train lets you watch the country pass.",
            "Fast trains link large cities in a few hours.",
            "Freight trains move goods across whole continents.",
            "Stations are often busy at the start of a holiday."
        ],
        [
            "火车在钢轨上一次运送很多人。",
            "坐火车长途旅行可以看沿途的风景。",
            "高铁几个小时就能连接大城市。",
            "货运列车把货物运过整片大陆。",
            "节假日开始时车站常常很拥挤。"
        ],
        ["station", "ticket", "carriage"],
        ["车站", "车票", "车厢"]
    ),
    topic!(
        "walking",
        "散步",
        [
            "A short walk each day is good for the heart.",
            "Walking gives the mind time to rest.",
            "A park or a quiet street makes a pleasant path.",
            "Good shoes make a long walk more comfortable.",
            "Walking with a friend turns exercise into a talk."
        ],
        [
            "每天散步一会儿对心脏有好处。",
            "散步让头脑得到休息。",
            "公园或安静的街道都是不错的路线。",
            "合脚的鞋让长时间散步更舒服。",
            "和朋友一起散步让锻炼变成聊天。"
        ],
        ["path", "shoes", "park"],
        ["小路", "鞋子", "公园"]
    ),
];

/// Topics of the eval split: none occurs in training.
pub const EVAL: &[Topic] = &[
    topic!(
        "lighthouses",
        "灯塔",
        [
            "A lighthouse warns ships away from rocks at night.",
            "Its light turns so sailors can tell one tower from another.",
            "Keepers once lived in small houses at the base.",
            "Most lighthouses now run without anyone on site.",
            "Many old towers are open to visitors in summer."
        ],
        [
            "灯塔在夜里提醒船只避开礁石。",
            "灯光旋转，水手能分辨不同的塔。",
            "过去守塔人住在塔下的小屋里。",
            "现在大多数灯塔无人值守。",
            "很多古老的灯塔夏天对游客开放。"
        ],
        ["beacon", "coast", "sailor"],
        ["灯光", "海岸", "水手"]
    ),
    topic!(
        "clocks",
        "时钟",
        [
            "A clock divides the day into hours and minutes.",
            "Early clocks used falling weights to keep time.",
            "A pendulum swings at a steady rate.",
            "Quartz clocks count the vibrations of a small crystal.",
            "Town clocks once set the rhythm of daily life."
        ],
        [
            "时钟把一天分成小时和分钟。",
            "早期的时钟靠下落的重锤计时。",
            "钟摆以稳定的节奏摆动。",
            "石英钟计数小晶体的振动。",
            "过去城镇的大钟决定了日常生活的节奏。"
        ],
        ["pendulum", "minute", "dial"],
        ["钟摆", "分钟", "表盘"]
    ),
    topic!(
        "mountains",
        "山",
        [
            "Mountains rise where the plates of the earth push together.",
            "The air grows thin and cold as you climb higher.",
            "Snow can stay on high peaks all year.",
            "Rivers often start as streams on a mountain side.",
            "Hikers should check the weather before a climb."
        ],
        [
            "山是地壳板块相互挤压形成的。",
            "越往高处空气越稀薄寒冷。",
            "高峰上的雪可能终年不化。",
            "河流常常发源于山坡上的小溪。",
            "登山前应该先查看天气。"
        ],
        ["peak", "trail", "summit"],
        ["山峰", "步道", "山顶"]
    ),
    topic!(
        "kites",
        "风筝",
        [
            "A kite rises when wind pushes against its surface.",
            "A long tail keeps a simple kite steady.",
            "Open fields are the safest place to fly one.",
            "Some kites are shaped like birds or fish.",
            "Spring winds make it a popular season for kites."
        ],
        [
            "风吹在风筝面上，风筝就飞起来了。",
            "长长的尾巴让简单的风筝保持平稳。",
            "空旷的田野是放风筝最安全的地方。",
            "有些风筝做成鸟或鱼的样子。",
            "春天的风让这个季节很适合放风筝。"
        ],
        ["string", "wind", "tail"],
        ["线轴", "春风", "尾巴"]
    ),
    topic!(
        "paper",
        "纸",
        [
            "Paper is made from plant fibres pressed into thin sheets.",
            "It was first made in China nearly two thousand years ago.",
            "Recycled paper saves trees and water.",
            "Thick paper is used for boxes and cards.",
            "Writing on paper still helps many people remember."
        ],
        [
            "纸是把植物纤维压成薄片做成的。",
            "纸在近两千年前最早出现在中国。",
            "再生纸节约树木和水。",
            "厚纸用来做盒子和卡片。",
            "在纸上写字仍然帮助很多人记忆。"
        ],
        ["fibre", "sheet", "ink"],
        ["纤维", "纸张", "墨水"]
    ),
    topic!(
        "swimming",
        "游泳",
        [
            "Swimming works almost every muscle of the body.",
            "Learning to float is the first step for beginners.",
            "Pools are calmer than open water.",
            "A steady breath makes long swims easier.",
            "Swimming is gentle on the joints."
        ],
        [
            "游泳几乎锻炼全身的肌肉。",
            "学会漂浮是初学者的第一步。",
            "泳池比开放水域平静。",
            "平稳的呼吸让长距离游泳更轻松。",
            "游泳对关节很温和。"
        ],
        ["pool", "stroke", "goggles"],
        ["泳池", "泳姿", "泳镜"]
    ),
];
