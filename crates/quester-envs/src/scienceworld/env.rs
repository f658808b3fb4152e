//! The ScienceWorld [`Env`]: a Java simulator process per env (taken from and given back to
//! the pool of `pool.rs`), driven over py4j.

use super::config::{ScienceWorldConfig, ScienceWorldPlan};
use super::expert::GoldPlan;
use super::server::{Server, ServerError, ServerOptions};
use super::tasks::{ACTION_TEMPLATES, TASKS};
use crate::action::extract_action;
use crate::env::{Env, EnvError, Info, Step};
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Mutex;

/// What the simulator answers to text it cannot parse (an invalid action).
pub const UNKNOWN_ACTION: &str = "No known action matches that input.";
/// The longest action (in characters) sent to the simulator; a longer one is invalid.
pub const MAX_ACTION_CHARS: usize = 300;
/// The most characters of one simulator text kept in an observation.
const MAX_TEXT_CHARS: usize = 8000;

/// One attempt at one task.
#[derive(Debug, Clone)]
struct Episode {
    task: &'static str,
    variation: i32,
    task_description: String,
    /// Every text sent to the simulator since the load, in order (replayed after a crash).
    sent: Vec<String>,
    /// Steps of this attempt, invalid ones too.
    turns: usize,
    /// round(100 * score) after the last step.
    score: i64,
    moves: i64,
    done: bool,
    won: bool,
    /// Why the episode ended.
    end: Option<&'static str>,
    /// The simulator's answer to the last valid action (the look around at the start).
    text: String,
    /// The simulator's answer to the last text sent (a replay compares its own with it).
    last_reply: String,
    /// Our note about the last step (an invalid action, a failure).
    notice: Option<String>,
    room: String,
    inventory: String,
    /// The valid actions of this state, ordered for listing (`None` until asked for).
    valid: Option<Vec<String>>,
    /// Locations seen (the rooms `look around` reported).
    visited: BTreeSet<String>,
    /// The gold-path expert's plan for this attempt, once asked for.
    expert: Option<GoldPlan>,
    /// A replay that reached another state than the attempt had, not yet reported in a step.
    diverged: Option<Divergence>,
}

/// A replay of an attempt's actions (after a crash, or for the gold-path expert) that reached
/// another score or last answer than the attempt had: some tasks are not deterministic (see
/// `docs/envs/scienceworld.md`).
#[derive(Debug, Clone, PartialEq)]
struct Divergence {
    /// The score the agent last saw (its rewards so far add up to it).
    old_score: i64,
    /// The score the replay reached.
    new_score: i64,
    /// Whether the last answer differs (beyond the order of list items).
    answer_changed: bool,
}

/// The room's name from `look around` ("This room is called the kitchen. ...").
pub fn location_of(room: &str) -> Option<String> {
    let i = room.find("is called the ")? + "is called the ".len();
    let rest = &room[i..];
    let end = rest.find(['.', '\n']).unwrap_or(rest.len());
    let name = rest[..end].trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// Orders valid actions for a capped list: one per template in turn (templates by id), each
/// template's actions alphabetically, so a short list still shows every kind of action.
pub fn order_valid_actions(json: &str) -> Result<Vec<String>, String> {
    let v: Json = serde_json::from_str(json).map_err(|e| format!("valid actions JSON: {e}"))?;
    let list = v
        .get("validActions")
        .and_then(Json::as_array)
        .ok_or("valid actions JSON without `validActions`")?;
    let mut by_template: BTreeMap<i64, BTreeSet<String>> = BTreeMap::new();
    for a in list {
        let (Some(action), template) = (
            a.get("action").and_then(Json::as_str),
            a.get("template_id").and_then(Json::as_i64).unwrap_or(-1),
        ) else {
            continue;
        };
        by_template
            .entry(template)
            .or_default()
            .insert(action.to_string());
    }
    let mut seen = BTreeSet::new();
    let mut columns: Vec<Vec<String>> = by_template
        .into_values()
        .map(|s| s.into_iter().rev().collect())
        .collect();
    let mut out = Vec::new();
    loop {
        let mut any = false;
        for c in &mut columns {
            if let Some(a) = c.pop() {
                any = true;
                if seen.insert(a.clone()) {
                    out.push(a);
                }
            }
        }
        if !any {
            return Ok(out);
        }
    }
}

/// Whether two simulator texts are the same up to the order of their list items. Some of the
/// simulator's listings (`look in ...`'s "You also see: A door to the hallway, A door to the
/// outside") follow Java identity hashes, so their order differs between processes and even
/// between loads in one process; the items (split at commas, periods, colons and line ends)
/// do not.
pub fn same_up_to_order(a: &str, b: &str) -> bool {
    fn items(s: &str) -> Vec<&str> {
        let mut v: Vec<&str> = s
            .split([',', '.', ':', '\n', '\t'])
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect();
        v.sort_unstable();
        v
    }
    a == b || items(a) == items(b)
}

/// Cuts `s` to `n` characters.
fn cut(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// The action text sent to the simulator: white space collapsed, control characters dropped.
pub(super) fn clean_action(raw: &str) -> String {
    raw.split_whitespace()
        .map(|w| w.chars().filter(|c| !c.is_control()).collect::<String>())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

struct Inner {
    server: Option<Server>,
    /// The split's variations of each task, fetched once.
    variations: HashMap<&'static str, Vec<i32>>,
    episode: Option<Episode>,
    /// Simulator restarts after a failure (for logs and tests).
    recoveries: u64,
}

/// ScienceWorld (see `docs/envs/scienceworld.md`).
pub struct ScienceWorldEnv {
    config: ScienceWorldConfig,
    plan: ScienceWorldPlan,
    options: ServerOptions,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for ScienceWorldEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScienceWorldEnv")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn sim_error(e: ServerError) -> EnvError {
    EnvError::Other(format!("scienceworld: {e}"))
}

/// What one action did.
struct Advance {
    text: String,
    score: i64,
    completed: bool,
    moves: i64,
    room: String,
    inventory: String,
    valid: Option<Vec<String>>,
}

impl ScienceWorldEnv {
    /// Checks the config; the simulator starts at the first reset.
    pub fn new(config: ScienceWorldConfig) -> Result<Self, EnvError> {
        let plan = config.validate()?;
        let options = ServerOptions {
            startup_timeout: plan.startup_timeout,
            call_timeout: plan.call_timeout,
            heap_mb: plan.java_heap_mb,
            ..ServerOptions::default()
        };
        Ok(Self {
            config,
            plan,
            options,
            inner: Mutex::new(Inner {
                server: None,
                variations: HashMap::new(),
                episode: None,
                recoveries: 0,
            }),
        })
    }

    /// Builds the env from a TOML table of [`ScienceWorldConfig`] keys.
    pub fn from_table(table: toml::Table) -> Result<Self, EnvError> {
        let config: ScienceWorldConfig =
            toml::Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| EnvError::Config {
                    env: "scienceworld".into(),
                    message: e.to_string().trim().replace('\n', " "),
                })?;
        Self::new(config)
    }

    /// Uses this jar (instead of fetching the pinned one) and this `java`.
    pub fn with_paths(mut self, jar: Option<PathBuf>, java: Option<PathBuf>) -> Self {
        self.options.jar = jar;
        self.options.java = java;
        self
    }

    /// Changes the `java` used for the next start (tests use a missing one to see a restart
    /// fail).
    pub fn set_java(&mut self, java: Option<PathBuf>) {
        self.options.java = java;
    }

    pub fn config(&self) -> &ScienceWorldConfig {
        &self.config
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The Java process's id, when one runs.
    pub fn java_pid(&self) -> Option<u32> {
        self.lock().server.as_ref().map(Server::pid)
    }

    /// How many times the simulator was restarted after a failure.
    pub fn recoveries(&self) -> u64 {
        self.lock().recoveries
    }

    /// The current task and variation.
    pub fn task(&self) -> Option<(&'static str, i32)> {
        self.lock().episode.as_ref().map(|e| (e.task, e.variation))
    }

    /// The current score (0..=100; negative after a failure).
    pub fn score(&self) -> Option<i64> {
        self.lock().episode.as_ref().map(|e| e.score)
    }

    /// The variations of `task` in the configured split.
    pub fn variations(&mut self, task: &str) -> Result<Vec<i32>, EnvError> {
        let name = super::tasks::task_name(task)
            .ok_or_else(|| EnvError::Other(format!("scienceworld: unknown task `{task}`")))?;
        let mut inner = self.lock();
        self.variations_of(&mut inner, name)
    }

    /// The variations of `task` in each split, `(train, dev, test)`.
    pub fn all_splits(&mut self, task: &str) -> Result<[Vec<i32>; 3], EnvError> {
        let name = super::tasks::task_name(task)
            .ok_or_else(|| EnvError::Other(format!("scienceworld: unknown task `{task}`")))?;
        let mut inner = self.lock();
        let server = self.server(&mut inner).map_err(sim_error)?;
        server
            .load(name, 0, &self.plan.simplifications, false)
            .map_err(sim_error)?;
        let mut out: [Vec<i32>; 3] = Default::default();
        for (i, split) in ["train", "dev", "test"].into_iter().enumerate() {
            out[i] = server.variations(split).map_err(sim_error)?;
        }
        // The simulator no longer holds the current attempt: start it again.
        let has_episode = inner.episode.is_some();
        drop(inner);
        if has_episode {
            self.restart()?;
        }
        Ok(out)
    }

    /// The simulator's gold action sequence for the current task and variation. Restarts the
    /// attempt (the gold path needs a load of its own).
    pub fn gold_actions(&mut self) -> Result<Vec<String>, EnvError> {
        let mut inner = self.lock();
        let (task, variation) = match &inner.episode {
            Some(e) => (e.task, e.variation),
            None => {
                return Err(EnvError::NotReset {
                    env: "scienceworld".into(),
                })
            }
        };
        let server = self.server(&mut inner).map_err(sim_error)?;
        server
            .load(task, variation, &self.plan.simplifications, true)
            .map_err(sim_error)?;
        let gold = server.gold_actions().map_err(sim_error)?;
        drop(inner);
        self.restart()?;
        Ok(gold)
    }

    /// The gold-path expert's next action. The first call of an attempt fetches the gold path
    /// (a load of its own) and then replays the attempt's actions, so it may come at any turn
    /// (the noisy expert's first move may be a random one).
    fn gold_expert_action(&mut self) -> Result<String, EnvError> {
        let mut inner = self.lock();
        let ep = inner.episode.clone().ok_or_else(|| EnvError::NotReset {
            env: "scienceworld".into(),
        })?;
        if ep.done {
            return Ok(super::expert::IDLE_ACTION.into());
        }
        if ep.expert.is_none() {
            let server = self.server(&mut inner).map_err(sim_error)?;
            server
                .load(ep.task, ep.variation, &self.plan.simplifications, true)
                .map_err(sim_error)?;
            let gold = server.gold_actions().map_err(sim_error)?;
            if let Err(e) = self.replay(&mut inner, &ep, &ep.sent) {
                // The simulator no longer holds the attempt: the next step restores it.
                inner.server = None;
                return Err(sim_error(e));
            }
            inner.episode.as_mut().expect("replayed").expert = Some(GoldPlan::new(gold));
        }
        let ep = inner.episode.as_mut().expect("checked");
        let plan = ep.expert.as_mut().expect("just set");
        Ok(plan.next_action(&ep.sent))
    }

    /// The running server; when there is none or it died, an idle one from the pool, else a
    /// new one.
    fn server<'a>(&self, inner: &'a mut Inner) -> Result<&'a mut Server, ServerError> {
        let usable = inner.server.as_mut().is_some_and(Server::is_usable);
        if !usable {
            inner.server = None;
            let pooled = if self.plan.pool_idle_max > 0 {
                super::pool::take(&self.options.key(), self.options.call_timeout)
            } else {
                None
            };
            inner.server = Some(match pooled {
                Some(s) => s,
                None => Server::start(&self.options)?,
            });
        }
        Ok(inner.server.as_mut().expect("just set"))
    }

    fn variations_of(&self, inner: &mut Inner, task: &'static str) -> Result<Vec<i32>, EnvError> {
        if let Some(v) = inner.variations.get(task) {
            return Ok(v.clone());
        }
        // A split's variations are fixed by the jar: fetched once per process (a fresh env per
        // trial would otherwise pay a load and a long list read at its first reset).
        type Key = (Option<PathBuf>, &'static str, &'static str);
        static KNOWN: Mutex<BTreeMap<Key, Vec<i32>>> = Mutex::new(BTreeMap::new());
        let key: Key = (self.options.jar.clone(), task, self.plan.split);
        let known = KNOWN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
            .cloned();
        if let Some(v) = known {
            inner.variations.insert(task, v.clone());
            return Ok(v);
        }
        let server = self.server(inner).map_err(sim_error)?;
        server
            .load(task, 0, &self.plan.simplifications, false)
            .map_err(sim_error)?;
        let v = server.variations(self.plan.split).map_err(sim_error)?;
        if v.is_empty() {
            return Err(EnvError::Other(format!(
                "scienceworld: task `{task}` has no {} variations",
                self.plan.split
            )));
        }
        inner.variations.insert(task, v.clone());
        KNOWN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, v.clone());
        Ok(v)
    }

    /// Runs one action and reads back what the observation needs.
    fn advance(&self, server: &mut Server, action: &str) -> Result<Advance, ServerError> {
        let text = server.call_str("step", &[super::py4j::Arg::Str(action)])?;
        self.observe(server, text)
    }

    /// Reads back what the observation needs after an action that answered `text`.
    fn observe(&self, server: &mut Server, text: String) -> Result<Advance, ServerError> {
        if text.trim() == UNKNOWN_ACTION {
            return Ok(Advance {
                text,
                score: 0,
                completed: false,
                moves: 0,
                room: String::new(),
                inventory: String::new(),
                valid: None,
            });
        }
        let score = (100.0 * server.call_f64("getScore")?).round() as i64;
        let completed = server.call_bool("getCompleted")?;
        let moves = server.call_i64("getNumMoves")?;
        let room = server.call_str("freeActionLook", &[])?;
        let inventory = if self.plan.show_inventory {
            server.call_str("freeActionInventory", &[])?
        } else {
            String::new()
        };
        let valid = if self.plan.max_listed_actions > 0 {
            Some(self.fetch_valid(server)?)
        } else {
            None
        };
        Ok(Advance {
            text,
            score,
            completed,
            moves,
            room,
            inventory,
            valid,
        })
    }

    fn fetch_valid(&self, server: &mut Server) -> Result<Vec<String>, ServerError> {
        let json = server.call_str("getValidActionObjectCombinationsJSON", &[])?;
        order_valid_actions(&json).map_err(ServerError::Simulator)
    }

    /// Loads the task fresh and looks around: the episode's first state.
    fn load_fresh(
        &self,
        server: &mut Server,
        task: &'static str,
        variation: i32,
    ) -> Result<Episode, ServerError> {
        server.load(task, variation, &self.plan.simplifications, false)?;
        let task_description = server.call_str("getTaskDescription", &[])?;
        let first = self.advance(server, "look around")?;
        let mut visited = BTreeSet::new();
        visited.extend(location_of(&first.room));
        Ok(Episode {
            task,
            variation,
            task_description,
            sent: Vec::new(),
            turns: 0,
            score: first.score,
            moves: first.moves,
            done: false,
            won: false,
            end: None,
            last_reply: first.text.clone(),
            text: first.text,
            notice: None,
            room: first.room,
            inventory: first.inventory,
            valid: first.valid,
            visited,
            expert: None,
            diverged: None,
        })
    }

    /// Starts a new simulator and brings it to `ep`'s state by replaying `sent` (see
    /// [`Self::replay`]).
    fn restore(&self, inner: &mut Inner, ep: &Episode, sent: &[String]) -> Result<(), ServerError> {
        inner.server = None;
        inner.recoveries += 1;
        self.replay(inner, ep, sent)
    }

    /// Loads `ep`'s task fresh on the current (or a new) server and replays `sent` onto it.
    ///
    /// When the replay reaches another score or last answer than `ep` had (some tasks are not
    /// deterministic: pollination, circuits, thermometer readings, which of like objects), the attempt goes on from
    /// the state the simulator reached, and the next step reports the difference
    /// ([`Divergence`]). Not restarted: the agent's history (its actions, in order) stays
    /// true, and the new state is one the same actions can reach; a restart would drop turns
    /// the agent has already spent.
    fn replay(&self, inner: &mut Inner, ep: &Episode, sent: &[String]) -> Result<(), ServerError> {
        let server = self.server(inner)?;
        let mut fresh = self.load_fresh(server, ep.task, ep.variation)?;
        let mut last = None;
        // The answer to the last action the simulator understood (an observation's text).
        let mut last_known = None;
        for a in sent {
            let reply = server.call_str("step", &[super::py4j::Arg::Str(a)])?;
            if reply.trim() != UNKNOWN_ACTION {
                last_known = Some(reply.clone());
            }
            last = Some(reply);
        }
        let diverged = if sent.is_empty() {
            None
        } else {
            let score = (100.0 * server.call_f64("getScore")?).round() as i64;
            let answer_changed = !last
                .as_deref()
                .is_some_and(|l| same_up_to_order(l, &ep.last_reply));
            (score != ep.score || answer_changed).then(|| Divergence {
                // An earlier divergence not yet reported keeps the score the agent saw.
                old_score: ep.diverged.as_ref().map_or(ep.score, |d| d.old_score),
                new_score: score,
                answer_changed,
            })
        };
        fresh.sent = sent.to_vec();
        fresh.turns = ep.turns;
        fresh.visited = ep.visited.clone();
        fresh.notice = ep.notice.clone();
        fresh.expert = ep.expert.clone();
        if let Some(d) = diverged {
            let text = last_known.unwrap_or_else(|| fresh.text.clone());
            let now = self.observe(server, text)?;
            fresh.score = d.new_score;
            fresh.moves = now.moves;
            fresh.text = now.text;
            fresh.last_reply = last.unwrap_or_default();
            fresh.visited.extend(location_of(&now.room));
            fresh.room = now.room;
            fresh.inventory = now.inventory;
            fresh.valid = now.valid;
            fresh.diverged = Some(d);
        } else {
            fresh.score = ep.score;
            fresh.moves = ep.moves;
            fresh.text = ep.text.clone();
            fresh.last_reply = ep.last_reply.clone();
            fresh.room = ep.room.clone();
            fresh.inventory = ep.inventory.clone();
            fresh.valid = ep.valid.clone();
            fresh.diverged = ep.diverged.clone();
        }
        inner.episode = Some(fresh);
        Ok(())
    }

    fn render(&self, ep: &Episode) -> String {
        let mut out = format!("Task: {}\n\n", ep.task_description.trim());
        if let Some(n) = &ep.notice {
            out.push_str(n);
            out.push_str("\n\n");
        }
        out.push_str(&format!(
            "Observation: {}\n",
            cut(ep.text.trim(), MAX_TEXT_CHARS)
        ));
        if self.plan.show_room && ep.room.trim() != ep.text.trim() {
            out.push_str(&format!(
                "\nRoom: {}\n",
                cut(ep.room.trim(), MAX_TEXT_CHARS)
            ));
        }
        if self.plan.show_inventory {
            out.push_str(&format!(
                "\nInventory: {}\n",
                cut(ep.inventory.trim(), MAX_TEXT_CHARS)
            ));
        }
        out.push_str(&format!("\nScore: {}/100\n", ep.score));
        if ep.done {
            let why = ep.end.unwrap_or("over");
            out.push_str(&format!("\nThe episode is over ({why}).\n"));
        } else if self.plan.max_listed_actions > 0 {
            if let Some(valid) = &ep.valid {
                let n = valid.len().min(self.plan.max_listed_actions);
                out.push_str(&format!(
                    "\nValid actions ({n} of {}): {}\n",
                    valid.len(),
                    valid[..n].join(" | ")
                ));
            }
        }
        out
    }

    fn outcome_key(ep: &Episode) -> String {
        let visited: Vec<&str> = ep.visited.iter().map(String::as_str).collect();
        format!(
            "score={};{};visited={}",
            ep.score,
            if ep.won { "won" } else { "not_won" },
            visited.join(",")
        )
    }

    fn finish_turn(&self, ep: &mut Episode) {
        if !ep.done && ep.turns >= self.plan.max_turns {
            ep.done = true;
            ep.end = Some("turn limit");
        }
    }

    fn invalid(&self, inner: &mut Inner, outcome: &str, notice: String) -> Step {
        let ep = inner.episode.as_mut().expect("checked by the caller");
        ep.turns += 1;
        ep.notice = Some(notice);
        self.finish_turn(ep);
        let ep = inner.episode.as_ref().expect("checked");
        let mut info = Info::new();
        info.insert("outcome".into(), outcome.into());
        info.insert("turn".into(), ep.turns.into());
        if ep.done {
            info.insert("truncated".into(), true.into());
        }
        Step {
            observation: self.render(ep),
            reward: 0.0,
            done: ep.done,
            won: ep.won,
            valid: false,
            info,
        }
    }

    /// One step; a divergence found on the way is left in the episode for [`Env::step`].
    fn step_locked(&self, inner: &mut Inner, response: &str) -> Step {
        let Some(ep) = inner.episode.as_ref() else {
            return Step::unchanged(String::new(), false, false, "not_reset");
        };
        if ep.done {
            return Step::unchanged(self.render(ep), true, ep.won, "episode_over");
        }
        let Some(raw) = extract_action(response) else {
            return self.invalid(
                inner,
                "no_action",
                "Invalid action: no <action>...</action> in the reply; nothing happened.".into(),
            );
        };
        let action = clean_action(raw);
        if action.is_empty() {
            return self.invalid(
                inner,
                "empty_action",
                "Invalid action: the <action> tag is empty; nothing happened.".into(),
            );
        }
        if action.chars().count() > MAX_ACTION_CHARS {
            return self.invalid(
                inner,
                "too_long",
                format!(
                    "Invalid action: longer than {MAX_ACTION_CHARS} characters; nothing happened."
                ),
            );
        }
        // The score the agent last saw: after a divergence its rewards still add up to the
        // score (the replay's change lands in this step's reward).
        let before = {
            let ep = inner.episode.as_ref().expect("checked");
            ep.diverged.as_ref().map_or(ep.score, |d| d.old_score)
        };
        match self.send(inner, &action) {
            Err(e) => {
                // Nothing more can be done for this attempt: end it, say why.
                let ep = inner.episode.as_mut().expect("checked");
                ep.turns += 1;
                ep.done = true;
                ep.end = Some("the simulator failed");
                ep.notice = Some(format!("The simulator failed: {e}"));
                ep.valid = None;
                let mut info = Info::new();
                info.insert("outcome".into(), "simulator_failed".into());
                info.insert("error".into(), e.to_string().into());
                let ep = inner.episode.as_ref().expect("checked");
                Step {
                    observation: self.render(ep),
                    reward: 0.0,
                    done: true,
                    won: false,
                    valid: false,
                    info,
                }
            }
            Ok(a) => {
                let ep = inner.episode.as_mut().expect("checked");
                ep.sent.push(action.clone());
                ep.last_reply = a.text.clone();
                if a.text.trim() == UNKNOWN_ACTION {
                    // ScienceWorld changed nothing; keep the state as it was.
                    let shown = cut(&action, 80);
                    return self.invalid(
                        inner,
                        "unknown_action",
                        format!("Invalid action: `{shown}`. {UNKNOWN_ACTION}"),
                    );
                }
                ep.turns += 1;
                ep.notice = None;
                ep.text = a.text;
                ep.score = a.score;
                ep.moves = a.moves;
                ep.visited.extend(location_of(&a.room));
                ep.room = a.room;
                ep.inventory = a.inventory;
                ep.valid = a.valid;
                ep.won = a.completed && a.score >= 100;
                if a.completed {
                    ep.done = true;
                    ep.end = Some(if ep.won {
                        "task completed"
                    } else {
                        "task failed"
                    });
                } else if a.score < 0 {
                    ep.done = true;
                    ep.end = Some("task failed");
                } else if a.moves > self.plan.env_step_limit {
                    ep.done = true;
                    ep.end = Some("simulator step limit");
                }
                self.finish_turn(ep);
                let reward = self.plan.reward_scale * (a.score - before) as f64 / 100.0;
                let mut info = Info::new();
                info.insert("outcome".into(), "stepped".into());
                info.insert("action".into(), action.into());
                info.insert("score".into(), a.score.into());
                info.insert("moves".into(), a.moves.into());
                info.insert("turn".into(), ep.turns.into());
                info.insert("completed".into(), a.completed.into());
                if let Some(end) = ep.end {
                    info.insert("end".into(), end.into());
                }
                if ep.done && !ep.won {
                    info.insert("truncated".into(), (ep.end == Some("turn limit")).into());
                }
                let ep = inner.episode.as_ref().expect("checked");
                Step {
                    observation: self.render(ep),
                    reward,
                    done: ep.done,
                    won: ep.won,
                    valid: true,
                    info,
                }
            }
        }
    }

    /// Sends `action`, restarting the simulator once (and replaying) when it died.
    fn send(&self, inner: &mut Inner, action: &str) -> Result<Advance, ServerError> {
        let mut tried_restore = false;
        loop {
            let dead = !inner.server.as_mut().is_some_and(Server::is_usable);
            if dead {
                if tried_restore {
                    return Err(ServerError::Simulator("the simulator died again".into()));
                }
                tried_restore = true;
                let ep = inner.episode.clone().expect("checked by the caller");
                let sent = ep.sent.clone();
                self.restore(inner, &ep, &sent)?;
            }
            let server = inner.server.as_mut().expect("alive");
            match self.advance(server, action) {
                Ok(a) => return Ok(a),
                Err(e) if e.is_fatal() && !tried_restore => {
                    inner.server = None;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for ScienceWorldEnv {
    /// The server goes back to the pool (or is killed: no pooling, a full pool, no answer).
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(server) = inner.server.take() {
            super::pool::give(server, self.plan.pool_idle_max);
        }
    }
}

impl Env for ScienceWorldEnv {
    fn name(&self) -> &'static str {
        "scienceworld"
    }

    fn reset(&mut self, seed: u64) -> Result<String, EnvError> {
        let n = self.plan.tasks.len() as u64;
        let task = self.plan.tasks[(seed % n) as usize];
        let mut inner = self.lock();
        let variations = self.variations_of(&mut inner, task)?;
        let variation = variations[((seed / n) % variations.len() as u64) as usize];
        inner.episode = None;
        let mut result = None;
        for _ in 0..2 {
            let server = self.server(&mut inner).map_err(sim_error)?;
            match self.load_fresh(server, task, variation) {
                Ok(ep) => {
                    result = Some(Ok(ep));
                    break;
                }
                Err(e) if e.is_fatal() => {
                    inner.server = None;
                    result = Some(Err(e));
                }
                Err(e) => {
                    result = Some(Err(e));
                    break;
                }
            }
        }
        let ep = result.expect("one try").map_err(sim_error)?;
        let obs = self.render(&ep);
        inner.episode = Some(ep);
        Ok(obs)
    }

    fn restart(&mut self) -> Result<String, EnvError> {
        let (task, variation) = self.task().ok_or_else(|| EnvError::NotReset {
            env: "scienceworld".into(),
        })?;
        let mut inner = self.lock();
        let mut last = None;
        for _ in 0..2 {
            let server = self.server(&mut inner).map_err(sim_error)?;
            match self.load_fresh(server, task, variation) {
                Ok(ep) => {
                    let obs = self.render(&ep);
                    inner.episode = Some(ep);
                    return Ok(obs);
                }
                Err(e) if e.is_fatal() => {
                    inner.server = None;
                    last = Some(e);
                }
                Err(e) => return Err(sim_error(e)),
            }
        }
        Err(sim_error(last.expect("two tries")))
    }

    fn step(&mut self, response: &str) -> Step {
        let mut inner = self.lock();
        let mut step = self.step_locked(&mut inner, response);
        if let Some(d) = inner.episode.as_mut().and_then(|e| e.diverged.take()) {
            step.info.insert("recovered".into(), "diverged".into());
            step.info.insert("old_score".into(), d.old_score.into());
            step.info
                .insert("replayed_score".into(), d.new_score.into());
            step.info
                .insert("answer_changed".into(), d.answer_changed.into());
        }
        step
    }

    fn observation(&self) -> String {
        let inner = self.lock();
        inner
            .episode
            .as_ref()
            .map(|e| self.render(e))
            .unwrap_or_default()
    }

    fn anchor(&self) -> String {
        let inner = self.lock();
        match &inner.episode {
            Some(e) => format!(
                "{}\n{}\nscore {}",
                e.room.trim(),
                e.inventory.trim(),
                e.score
            ),
            None => String::new(),
        }
    }

    fn rules(&self) -> String {
        format!(
            "ScienceWorld: a text simulation of a house and its surroundings (kitchen, \
             greenhouse, workshop, outside, ...) in which you carry out an elementary-school \
             science task. Reply with exactly one action inside <action>...</action>, for \
             example <action>go to kitchen</action>. Action forms (OBJ and LOC are names of \
             things and places you can see): {}. The observation lists valid actions; prefer \
             them. The score (0-100) rises as you make progress; focusing on the wrong thing \
             fails the task.",
            ACTION_TEMPLATES.join(", ")
        )
    }

    fn admissible_actions(&self) -> Option<Vec<String>> {
        let mut inner = self.lock();
        let ep = inner.episode.as_ref()?;
        if ep.done {
            return Some(Vec::new());
        }
        if let Some(v) = &ep.valid {
            return Some(v.clone());
        }
        // Not listed in the observation: ask the simulator now (it must be the live one that
        // holds this state).
        let server = inner.server.as_mut()?;
        if !server.is_usable() {
            return None;
        }
        let valid = self.fetch_valid(server).ok()?;
        inner.episode.as_mut().expect("checked").valid = Some(valid.clone());
        Some(valid)
    }

    fn max_turns(&self) -> usize {
        self.plan.max_turns
    }

    fn task_info(&self) -> Info {
        let inner = self.lock();
        let mut info = Info::new();
        if let Some(e) = &inner.episode {
            let id = TASKS
                .iter()
                .find(|(_, n, _)| *n == e.task)
                .map(|(id, _, _)| *id)
                .unwrap_or("");
            info.insert("task".into(), e.task.into());
            info.insert("task_id".into(), id.into());
            info.insert("variation".into(), e.variation.into());
            info.insert("split".into(), self.plan.split.into());
            info.insert(
                "simplifications".into(),
                self.plan.simplifications.clone().into(),
            );
        }
        info
    }

    fn history_observation(&self, observation: &str) -> String {
        // Earlier turns: without the room, the inventory and the list of valid actions.
        let mut out = String::new();
        for block in observation.split("\n\n") {
            let b = block.trim_start();
            if b.starts_with("Room: ") || b.starts_with("Valid actions (") {
                continue;
            }
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(block);
        }
        out
    }

    fn outcome(&self) -> String {
        let inner = self.lock();
        inner
            .episode
            .as_ref()
            .map(Self::outcome_key)
            .unwrap_or_default()
    }

    fn is_done(&self) -> bool {
        self.lock().episode.as_ref().is_some_and(|e| e.done)
    }

    fn expert_action(&mut self, _rng: &mut dyn rand::RngCore) -> Option<Result<String, EnvError>> {
        Some(self.gold_expert_action())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_from_look_around() {
        assert_eq!(
            location_of("This room is called the hallway. In it, you see: \n\tthe agent"),
            Some("hallway".into())
        );
        assert_eq!(
            location_of("This outside location is called the outside. Here you see:"),
            Some("outside".into())
        );
        assert_eq!(location_of("You move to the kitchen."), None);
    }

    #[test]
    fn valid_actions_alternate_templates() {
        let json = r#"{"validActions":[
            {"action":"open door to kitchen","template_id":0,"obj_ids":[1]},
            {"action":"close door to kitchen","template_id":1,"obj_ids":[1]},
            {"action":"open cupboard","template_id":0,"obj_ids":[2]},
            {"action":"look around","template_id":3,"obj_ids":[]},
            {"action":"open cupboard","template_id":0,"obj_ids":[3]}
        ]}"#;
        assert_eq!(
            order_valid_actions(json).unwrap(),
            vec![
                "open cupboard",
                "close door to kitchen",
                "look around",
                "open door to kitchen"
            ]
        );
        assert!(order_valid_actions("not json").is_err());
        assert!(order_valid_actions("{}").is_err());
    }

    #[test]
    fn actions_are_cleaned() {
        assert_eq!(clean_action("  go\n to\t\tkitchen \u{0}"), "go to kitchen");
        assert_eq!(clean_action("\u{0}\u{1}"), "");
        assert_eq!(cut("abcdef", 3), "abc...");
        assert_eq!(cut("abc", 3), "abc");
    }

    #[test]
    fn texts_compare_up_to_list_order() {
        let a = "Inside is: \n\ta jug\n\n You also see: A door to the outside (that is open), A \
                 door to the hallway (that is open).";
        let b = "Inside is: \n\ta jug\n\n You also see: A door to the hallway (that is open), A \
                 door to the outside (that is open).";
        assert!(same_up_to_order(a, b));
        assert!(!same_up_to_order(a, &a.replace("outside", "kitchen")));
        assert!(!same_up_to_order("a, a, b", "a, b, b"));
    }
}
