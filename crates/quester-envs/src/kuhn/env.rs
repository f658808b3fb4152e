//! The Kuhn Poker [`Env`]: one hand per attempt; the opponent acts inside `reset`/`step`.

use super::config::{AgentPosition, KuhnConfig};
use super::game::{contribution, is_terminal, parse_action, payoff, to_act, Action, Card};
use super::opponents::KuhnBot;
use crate::action::extract_action;
use crate::env::{config_error, Env, EnvError, Info, Step};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[derive(Debug, Clone)]
struct Task {
    seed: u64,
    /// Cards by seat (seat 0 acts first).
    cards: [Card; 2],
    agent_seat: usize,
    history: Vec<Action>,
    /// The opponent's RNG; re-seeded from the task seed by `restart`.
    rng: ChaCha8Rng,
    turns: usize,
    done: bool,
    /// The agent's chip payoff once the hand is over.
    agent_chips: Option<i32>,
    truncated: bool,
}

/// Kuhn Poker against one configured opponent (see `docs/envs/kuhn.md`).
#[derive(Debug, Clone)]
pub struct KuhnEnv {
    config: KuhnConfig,
    bot: KuhnBot,
    position: AgentPosition,
    task: Option<Task>,
}

impl KuhnEnv {
    /// Builds the env after checking the config. With the `cfr` opponent the equilibrium is
    /// solved here (once per process).
    pub fn new(config: KuhnConfig) -> Result<Self, EnvError> {
        let (bot, position) = config.validate()?;
        if bot == KuhnBot::Cfr {
            let _ = super::cfr::equilibrium();
        }
        Ok(Self {
            config,
            bot,
            position,
            task: None,
        })
    }

    /// Builds the env from a TOML table of [`KuhnConfig`] keys.
    pub fn from_table(table: toml::Table) -> Result<Self, EnvError> {
        let config: KuhnConfig =
            quester_config::from_table(table).map_err(|e| config_error("kuhn", e))?;
        Self::new(config)
    }

    pub fn config(&self) -> &KuhnConfig {
        &self.config
    }

    /// Cards by seat, the agent's seat and the betting so far (`None` before reset).
    pub fn hand(&self) -> Option<([Card; 2], usize, &[Action])> {
        self.task
            .as_ref()
            .map(|t| (t.cards, t.agent_seat, t.history.as_slice()))
    }

    /// The agent's chip payoff once the hand is over.
    pub fn agent_chips(&self) -> Option<i32> {
        self.task.as_ref().and_then(|t| t.agent_chips)
    }

    fn start(&self, seed: u64) -> Task {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut deck = Card::ALL;
        deck.shuffle(&mut rng);
        let mut task = Task {
            seed,
            cards: [deck[0], deck[1]],
            agent_seat: self.position.seat_for_seed(seed),
            history: Vec::with_capacity(3),
            rng,
            turns: 0,
            done: false,
            agent_chips: None,
            truncated: false,
        };
        self.opponent_acts(&mut task);
        task
    }

    /// Lets the opponent act while it is its turn, then settles a finished hand.
    fn opponent_acts(&self, task: &mut Task) {
        while !is_terminal(&task.history) && to_act(&task.history) != task.agent_seat {
            let card = task.cards[1 - task.agent_seat];
            let a = self.bot.act(card, &task.history, &mut task.rng);
            task.history.push(a);
        }
        if let Some(p0) = payoff(task.cards, &task.history) {
            task.done = true;
            task.agent_chips = Some(if task.agent_seat == 0 { p0 } else { -p0 });
        }
    }

    fn no_change(&self, outcome: &str) -> Step {
        Step::unchanged(
            self.observation(),
            self.task.as_ref().is_none_or(|t| t.done),
            self.agent_chips().is_some_and(|c| c > 0),
            outcome,
        )
    }
}

fn facing_bet(history: &[Action]) -> bool {
    history.last() == Some(&Action::Bet)
}

impl Env for KuhnEnv {
    fn name(&self) -> &'static str {
        "kuhn"
    }

    fn reset(&mut self, seed: u64) -> Result<String, EnvError> {
        self.task = Some(self.start(seed));
        Ok(self.observation())
    }

    fn restart(&mut self) -> Result<String, EnvError> {
        let seed = self
            .task
            .as_ref()
            .ok_or_else(|| EnvError::NotReset { env: "kuhn".into() })?
            .seed;
        // Replaying from the seed restores the deal and the opponent's RNG exactly.
        self.task = Some(self.start(seed));
        Ok(self.observation())
    }

    fn step(&mut self, response: &str) -> Step {
        let Some(mut task) = self.task.take() else {
            return self.no_change("not_reset");
        };
        if task.done {
            self.task = Some(task);
            return self.no_change("after_done");
        }
        task.turns += 1;
        let action =
            extract_action(response).and_then(|t| parse_action(t, facing_bet(&task.history)));
        let mut info = Info::new();
        if let Some(a) = action {
            task.history.push(a);
            self.opponent_acts(&mut task);
        } else {
            info.insert("outcome".into(), "unparsable".into());
        }
        if !task.done && task.turns >= self.config.max_turns {
            // Out of turns: the agent forfeits what it has put in the pot, like a fold.
            task.done = true;
            task.truncated = true;
            task.agent_chips = Some(-contribution(&task.history, task.agent_seat));
            info.insert("truncated".into(), true.into());
        }
        let mut reward = 0.0;
        if let (true, Some(chips)) = (task.done, task.agent_chips) {
            reward = self.config.reward_scale * f64::from(chips);
            info.insert("chips".into(), chips.into());
            info.insert(
                "opponent_card".into(),
                task.cards[1 - task.agent_seat].symbol().to_string().into(),
            );
        }
        let (done, won) = (task.done, task.agent_chips.is_some_and(|c| c > 0));
        self.task = Some(task);
        Step {
            observation: self.observation(),
            reward,
            done,
            won,
            valid: action.is_some(),
            info,
        }
    }

    fn observation(&self) -> String {
        let Some(t) = &self.task else {
            return "No task yet: call reset.".into();
        };
        let me = t.agent_seat;
        let mut out = format!(
            "You are player {} ({}). Your card: {}.\nBetting:",
            me + 1,
            if me == 0 {
                "you act first"
            } else {
                "the opponent acts first"
            },
            t.cards[me].symbol()
        );
        if t.history.is_empty() {
            out.push_str(" none yet.");
        }
        for (i, a) in t.history.iter().enumerate() {
            let who = if i % 2 == me { "you" } else { "opponent" };
            out.push_str(&format!(
                "{} {who} {}",
                if i == 0 { "" } else { "," },
                a.name()
            ));
        }
        out.push('\n');
        match t.agent_chips {
            None if facing_bet(&t.history) => out.push_str("Your move: PASS (fold) or BET (call)."),
            None => out.push_str("Your move: PASS (check) or BET (bet 1)."),
            Some(chips) => {
                let opp = t.cards[1 - me].symbol();
                let how = if t.truncated {
                    "You ran out of turns and forfeit.".to_string()
                } else if is_fold(&t.history) {
                    let folder = (t.history.len() - 1) % 2;
                    if folder == me {
                        "You folded.".to_string()
                    } else {
                        "The opponent folded.".to_string()
                    }
                } else {
                    "Showdown.".to_string()
                };
                let result = match chips {
                    c if c > 0 => format!("You win {c} chip{}.", plural(c)),
                    c => format!("You lose {} chip{}.", -c, plural(c)),
                };
                out.push_str(&format!("{how} Opponent's card: {opp}. {result}"));
            }
        }
        out
    }

    fn anchor(&self) -> String {
        // The agent's information set: seat, card and betting.
        self.task.as_ref().map_or_else(String::new, |t| {
            let h: String = t
                .history
                .iter()
                .map(|a| if *a == Action::Bet { 'b' } else { 'p' })
                .collect();
            format!(
                "seat {} card {} history {h}",
                t.agent_seat + 1,
                t.cards[t.agent_seat].symbol()
            )
        })
    }

    fn rules(&self) -> String {
        format!(
            "Kuhn Poker. A deck of three cards J < Q < K; each player antes 1 chip and gets one \
             card. Player 1 acts first. Actions: <action>PASS</action> (check, or fold when \
             facing a bet) and <action>BET</action> (bet 1 chip, or call a bet). Pass-pass and \
             bet-call go to a showdown: the higher card wins the pot. Folding loses the chips \
             already in. Reward = {} x chips won.",
            self.config.reward_scale
        )
    }

    fn admissible_actions(&self) -> Option<Vec<String>> {
        let t = self.task.as_ref()?;
        if t.done {
            return Some(Vec::new());
        }
        Some(vec!["PASS".into(), "BET".into()])
    }

    fn max_turns(&self) -> usize {
        self.config.max_turns
    }

    fn task_info(&self) -> Info {
        let mut info = Info::new();
        info.insert("opponent".into(), self.bot.id().into());
        if let Some(t) = &self.task {
            info.insert("agent_position".into(), (t.agent_seat + 1).into());
        }
        info
    }

    fn privileged_info(&self) -> Option<String> {
        // The deal is fixed at reset, so the card is known from then on, not only at the end.
        let t = self.task.as_ref()?;
        Some(format!(
            "The opponent held the {}.",
            t.cards[1 - t.agent_seat].symbol()
        ))
    }

    fn is_done(&self) -> bool {
        self.task.as_ref().is_some_and(|t| t.done)
    }

    fn expert_action(&mut self, rng: &mut dyn rand::RngCore) -> Option<Result<String, EnvError>> {
        let Some(t) = &self.task else {
            return Some(Err(EnvError::NotReset { env: "kuhn".into() }));
        };
        // The opponent acts inside reset/step, so a live hand is always at the agent's turn.
        let action = (!t.done)
            .then(|| super::expert::expert_kuhn_action(t.cards[t.agent_seat], &t.history, rng))
            .flatten();
        Some(action.map(|a| a.name().to_string()).ok_or_else(|| {
            EnvError::Other("kuhn: the hand is over; the expert has no move".into())
        }))
    }
}

fn is_fold(history: &[Action]) -> bool {
    let n = history.len();
    n >= 2 && history[n - 1] == Action::Pass && history[n - 2] == Action::Bet
}

fn plural(c: i32) -> &'static str {
    if c.abs() == 1 {
        ""
    } else {
        "s"
    }
}
