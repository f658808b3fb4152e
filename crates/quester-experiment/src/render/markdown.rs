//! The summary as markdown tables (results.md).

use quester_algos::Interval;

use crate::aggregate::{Figures, Summary};
use crate::runner::fmt_duration;

/// `0.141 [0.080, 0.203]`.
pub fn fmt_interval(i: &Interval) -> String {
    format!("{:.3} [{:.3}, {:.3}]", i.mean, i.lo, i.hi)
}

/// A difference, in bold when its interval excludes zero.
fn fmt_diff(i: &Interval) -> String {
    let s = format!("{:+.3} [{:+.3}, {:+.3}]", i.mean, i.lo, i.hi);
    if i.excludes_zero() {
        format!("**{s}**")
    } else {
        s
    }
}

fn cells(metrics: &[String], figs: &Figures, f: fn(&Interval) -> String) -> String {
    metrics
        .iter()
        .map(|m| figs.get(m).map_or("-".to_string(), f))
        .collect::<Vec<_>>()
        .join(" | ")
}

fn header(first: &[&str], metrics: &[String], last: &[&str]) -> String {
    let cols: Vec<String> = first
        .iter()
        .map(std::string::ToString::to_string)
        .chain(metrics.iter().map(|m| m.replace('_', " ")))
        .chain(last.iter().map(std::string::ToString::to_string))
        .collect();
    format!(
        "| {} |\n|{}\n",
        cols.join(" | "),
        " --- |".repeat(cols.len())
    )
}

/// results.md.
pub fn markdown(s: &Summary) -> String {
    let pct = (s.level * 100.0).round();
    let mut out = format!("# Experiment `{}`\n\n", s.name);
    if !s.description.trim().is_empty() {
        out.push_str(s.description.trim());
        out.push_str("\n\n");
    }
    out.push_str(&format!(
        "Each cell: the mean, and its {pct}% percentile bootstrap interval ({} resamples) over \
         seeds and evaluation tasks. pass@k: the share of trials won within their first k \
         attempts; reward: the mean reward of an attempt; invalid rate: the share of invalid \
         actions.\n\n",
        s.resamples
    ));
    out.push_str("## Evaluation\n\n");
    out.push_str(&header(
        &["run", "method", "seeds", "episodes"],
        &s.metrics,
        &["train time / seed", "eval tasks"],
    ));
    for r in &s.runs {
        let tasks = format!(
            "{} x {} (k = {})",
            r.eval_tasks, r.samples_per_task, r.num_attempts
        );
        if let Some(u) = &r.untrained {
            out.push_str(&format!(
                "| {} (untrained) | {} | - | 0 | {} | - | {tasks} |\n",
                r.name,
                r.method,
                cells(&s.metrics, u, fmt_interval)
            ));
        }
        let seeds = format!("{}/{}", r.seeds_done.len(), r.seeds_planned);
        let episodes = r.episodes.map_or("-".to_string(), |e| e.to_string());
        let time = r
            .train_seconds
            .map_or("-".to_string(), |t| fmt_duration(t.mean));
        let figs = r.trained.as_ref().map_or_else(
            || vec!["-"; s.metrics.len()].join(" | "),
            |t| cells(&s.metrics, t, fmt_interval),
        );
        out.push_str(&format!(
            "| {} | {} | {seeds} | {episodes} | {figs} | {time} | {tasks} |\n",
            r.name, r.method
        ));
    }
    for r in s.runs.iter().filter(|r| r.evaluated_as.is_some()) {
        let base = r.name.split(" as ").next().unwrap_or(&r.name);
        let like = r.evaluated_as.as_deref().unwrap_or_default();
        out.push_str(&format!(
            "\n`{}`: {base}'s trained checkpoints evaluated the way {like} is (its prompts \
             and attempts); its untrained row is {like}'s.\n",
            r.name
        ));
    }
    let gains: Vec<_> = s.runs.iter().filter(|r| r.gain.is_some()).collect();
    if !gains.is_empty() {
        out.push_str(
            "\n## Trained minus untrained (same tasks, same sampling streams)\n\nBold: the \
             interval excludes 0.\n\n",
        );
        out.push_str(&header(&["run"], &s.metrics, &[]));
        for r in gains {
            if let Some(g) = &r.gain {
                out.push_str(&format!(
                    "| {} | {} |\n",
                    r.name,
                    cells(&s.metrics, g, fmt_diff)
                ));
            }
        }
    }
    if !s.comparisons.is_empty() {
        out.push_str(
            "\n## Paired comparisons (a - b on the same tasks and sampling streams, seeds \
             paired)\n\nBold: the interval excludes 0.\n\n",
        );
        out.push_str(&header(&["a - b", "seeds"], &s.metrics, &[]));
        for c in &s.comparisons {
            out.push_str(&format!(
                "| {} - {} | {} | {} |\n",
                c.a,
                c.b,
                c.seeds,
                cells(&s.metrics, &c.diff, fmt_diff)
            ));
        }
    }
    if !s.notes.is_empty() {
        out.push_str("\n## Notes\n\n");
        for n in &s.notes {
            out.push_str(&format!("- {n}\n"));
        }
    }
    out
}
