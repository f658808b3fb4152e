//! `quester evaluate ifeval`: IFEval's 541 prompts answered by any policy (the default model, a
//! model file, a run's checkpoint, or an OpenAI-compatible server) and scored; or, with
//! `--responses`, an existing response file scored alone. The run and its output folder are
//! quester-eval's ([`quester_eval::ifeval`]).

use anyhow::bail;
use std::path::PathBuf;

use quester_eval::ifeval::{Generation, IfevalRun, PolicySource, Responses};

#[derive(clap::Args, Debug)]
pub struct IfevalArgs {
    /// Score this response file (JSONL, one {"prompt", "response"} per line) instead of
    /// generating.
    #[arg(long, conflicts_with_all = ["model", "checkpoint", "server"])]
    pub responses: Option<PathBuf>,
    /// A GGUF file or Hugging Face folder (default: SmolLM2-135M-Instruct, fetched if missing).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// A run's checkpoint folder (or its checkpoints/latest pointer): the run's model with those
    /// weights.
    #[arg(long, conflicts_with = "model")]
    pub checkpoint: Option<PathBuf>,
    /// An OpenAI-compatible server's base URL, e.g. http://127.0.0.1:8080/v1.
    #[arg(long, conflicts_with_all = ["model", "checkpoint"])]
    pub server: Option<String>,
    /// The model id sent to the server.
    #[arg(long, default_value = "default", requires = "server")]
    pub server_model: String,
    /// Where the native model runs: cpu, cuda or cuda:N.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// How the model's products multiply: f32 (the reference run's), bf16 (faster where the
    /// CPU has AVX512-BF16; greedy answers can differ) or auto (bf16 where it is faster). Not
    /// for --checkpoint, which keeps its run's setting.
    #[arg(long, default_value = "f32", value_parser = parse_precision, conflicts_with = "checkpoint")]
    pub precision: quester_model::PrecisionChoice,
    /// New-token limit per response (lm-evaluation-harness: 1280).
    #[arg(long, default_value_t = 1280)]
    pub max_new_tokens: usize,
    /// Sampling temperature; 0 = greedy (IFEval's setting).
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// Most prompts in generation at once.
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// Seed of the sampling streams (unused when greedy).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Only the first N prompts (a quick look; the scores are then NOT IFEval's).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Output folder.
    #[arg(long, default_value = "runs/ifeval")]
    pub out: PathBuf,
}

pub fn run(args: IfevalArgs) -> anyhow::Result<()> {
    if args.limit == Some(0) {
        bail!("--limit 0: nothing to evaluate");
    }
    let responses = match args.responses {
        Some(path) => Responses::File(path),
        None => Responses::Generate(Generation {
            policy: match (args.server, args.checkpoint) {
                (Some(url), _) => PolicySource::Server {
                    url,
                    model: args.server_model,
                },
                (None, Some(path)) => PolicySource::Checkpoint {
                    path,
                    device: args.device,
                },
                (None, None) => PolicySource::Model {
                    path: args.model,
                    device: args.device,
                    precision: args.precision,
                },
            },
            max_new_tokens: args.max_new_tokens,
            temperature: args.temperature,
            batch: args.batch,
            seed: args.seed,
        }),
    };
    let run = IfevalRun {
        responses,
        limit: args.limit,
        out: args.out,
    };
    let outcome = quester_eval::ifeval::run(&run)?;
    if outcome.prompts < outcome.of {
        println!(
            "(first {} of {} prompts only: not IFEval's scores)",
            outcome.prompts, outcome.of
        );
    }
    print!("{}", outcome.report.table());
    println!(
        "average of prompt- and instruction-level strict: {:.1}",
        100.0 * outcome.average_strict()
    );
    println!("written to {}", run.out.display());
    Ok(())
}

fn parse_precision(v: &str) -> Result<quester_model::PrecisionChoice, String> {
    serde_json::from_value(serde_json::Value::String(v.to_string()))
        .map_err(|_| format!("{v}: allowed f32, bf16, auto"))
}
