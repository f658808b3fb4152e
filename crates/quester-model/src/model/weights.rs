//! Building a model from named tensors, random initialisation, LoRA and weight listing.

use super::{Layer, Model};
use crate::config::{Architecture, ModelConfig};
use crate::error::{ModelError, Result};
use crate::nn::linear::init_rng;
use crate::nn::linear::LORA_TARGETS;
use crate::nn::{Linear, LoraConfig};
use crate::precision::Precision;
use candle_core::{DType, Device, Tensor, Var};
use rand::Rng;
use std::collections::HashMap;

/// Draws a tensor of a shape from normal(mean, std): `randn(shape, std, mean)`.
type RandnFn<'a> = dyn FnMut(&[usize], f64, f64) -> Result<Tensor> + 'a;

impl Model {
    /// Builds a model from tensors with Hugging Face names (`model.layers.0.self_attn.q_proj.weight`,
    /// ...), converted to `dtype`. `source` names the file or directory in errors.
    pub fn from_named_tensors(
        config: ModelConfig,
        mut tensors: HashMap<String, Tensor>,
        dtype: DType,
        source: &str,
    ) -> Result<Self> {
        config.validate()?;
        let c = &config;
        let mut take = |name: &str, shape: &[usize]| -> Result<Var> {
            let t = tensors
                .remove(name)
                .ok_or_else(|| ModelError::bad_file(source, format!("missing tensor `{name}`")))?;
            if t.dims() != shape {
                return Err(ModelError::bad_file(
                    source,
                    format!(
                        "tensor `{name}` has shape {:?}, expected {shape:?}",
                        t.dims()
                    ),
                ));
            }
            Ok(Var::from_tensor(&t.to_dtype(dtype)?)?)
        };
        let embed_tokens = take("model.embed_tokens.weight", &[c.vocab_size, c.hidden_size])?;
        let (qd, kvd) = (
            c.num_attention_heads * c.head_dim,
            c.num_key_value_heads * c.head_dim,
        );
        let mut layers = Vec::with_capacity(c.num_hidden_layers);
        for i in 0..c.num_hidden_layers {
            let p = format!("model.layers.{i}");
            let mut lin = |name: &str, out: usize, inp: usize, bias: bool| -> Result<Linear> {
                Ok(Linear::from_vars(
                    take(&format!("{p}.{name}.weight"), &[out, inp])?,
                    if bias {
                        Some(take(&format!("{p}.{name}.bias"), &[out])?)
                    } else {
                        None
                    },
                ))
            };
            let ab = c.attention_bias;
            let q_proj = lin("self_attn.q_proj", qd, c.hidden_size, ab)?;
            let k_proj = lin("self_attn.k_proj", kvd, c.hidden_size, ab)?;
            let v_proj = lin("self_attn.v_proj", kvd, c.hidden_size, ab)?;
            let o_proj = lin("self_attn.o_proj", c.hidden_size, qd, false)?;
            let gate_proj = lin("mlp.gate_proj", c.intermediate_size, c.hidden_size, false)?;
            let up_proj = lin("mlp.up_proj", c.intermediate_size, c.hidden_size, false)?;
            let down_proj = lin("mlp.down_proj", c.hidden_size, c.intermediate_size, false)?;
            let (q_norm, k_norm) = if c.qk_norm {
                (
                    Some(take(
                        &format!("{p}.self_attn.q_norm.weight"),
                        &[c.head_dim],
                    )?),
                    Some(take(
                        &format!("{p}.self_attn.k_norm.weight"),
                        &[c.head_dim],
                    )?),
                )
            } else {
                (None, None)
            };
            layers.push(Layer {
                input_layernorm: take(&format!("{p}.input_layernorm.weight"), &[c.hidden_size])?,
                q_proj,
                k_proj,
                v_proj,
                o_proj,
                q_norm,
                k_norm,
                post_attention_layernorm: take(
                    &format!("{p}.post_attention_layernorm.weight"),
                    &[c.hidden_size],
                )?,
                gate_proj,
                up_proj,
                down_proj,
            });
        }
        let norm = take("model.norm.weight", &[c.hidden_size])?;
        let lm_head = if c.tie_word_embeddings {
            None
        } else {
            Some(take("lm_head.weight", &[c.vocab_size, c.hidden_size])?)
        };
        Ok(Model {
            config,
            embed_tokens,
            layers,
            norm,
            lm_head,
            lora_attached: false,
            precision: Precision::F32,
            packed_head: Default::default(),
        })
    }

    /// A randomly initialised model (normal(0, 0.2) matrices, norms near 1) for tests, drawn
    /// from a seeded host stream: the same weights on every machine.
    pub fn tiny_random(config: &ModelConfig, seed: u64) -> Result<Self> {
        let mut rng = init_rng(seed);
        Self::random_with(config, &mut |shape: &[usize], std: f64, mean: f64| {
            let n: usize = shape.iter().product();
            // Box-Muller from the seeded stream keeps the weights reproducible.
            let v: Vec<f32> = (0..n)
                .map(|_| {
                    let u1: f64 = rng.random_range(1e-12..1.0);
                    let u2: f64 = rng.random::<f64>();
                    (mean + std * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos())
                        as f32
                })
                .collect();
            Ok(Tensor::from_vec(v, shape, &Device::Cpu)?)
        })
    }

    /// A random model of any size drawn on `device` itself (a GPU's generator, seeded with
    /// `seed`): a 4B-parameter model in seconds, where the host stream of [`Model::tiny_random`]
    /// takes minutes. On the CPU it is [`Model::tiny_random`].
    pub fn random_on(config: &ModelConfig, seed: u64, device: &Device) -> Result<Self> {
        if device.is_cpu() {
            return Self::tiny_random(config, seed);
        }
        device.set_seed(seed)?;
        Self::random_with(config, &mut |shape: &[usize], std: f64, mean: f64| {
            Ok(Tensor::randn(mean as f32, std as f32, shape, device)?)
        })
    }

    /// A model whose every weight is `randn(shape, std, mean)`.
    fn random_with(config: &ModelConfig, randn: &mut RandnFn<'_>) -> Result<Self> {
        let c = config;
        let mut tensors = HashMap::new();
        let (h, qd, kvd) = (
            c.hidden_size,
            c.num_attention_heads * c.head_dim,
            c.num_key_value_heads * c.head_dim,
        );
        let std = 0.2;
        tensors.insert(
            "model.embed_tokens.weight".into(),
            randn(&[c.vocab_size, h], 1.0, 0.0)?,
        );
        for i in 0..c.num_hidden_layers {
            let p = format!("model.layers.{i}");
            let mut put = |n: &str, t: Tensor| {
                tensors.insert(format!("{p}.{n}"), t);
            };
            put("input_layernorm.weight", randn(&[h], 0.1, 1.0)?);
            put("post_attention_layernorm.weight", randn(&[h], 0.1, 1.0)?);
            put("self_attn.q_proj.weight", randn(&[qd, h], std, 0.0)?);
            put("self_attn.k_proj.weight", randn(&[kvd, h], std, 0.0)?);
            put("self_attn.v_proj.weight", randn(&[kvd, h], std, 0.0)?);
            put("self_attn.o_proj.weight", randn(&[h, qd], std, 0.0)?);
            put(
                "mlp.gate_proj.weight",
                randn(&[c.intermediate_size, h], std, 0.0)?,
            );
            put(
                "mlp.up_proj.weight",
                randn(&[c.intermediate_size, h], std, 0.0)?,
            );
            put(
                "mlp.down_proj.weight",
                randn(&[h, c.intermediate_size], std, 0.0)?,
            );
            if c.attention_bias {
                put("self_attn.q_proj.bias", randn(&[qd], std, 0.0)?);
                put("self_attn.k_proj.bias", randn(&[kvd], std, 0.0)?);
                put("self_attn.v_proj.bias", randn(&[kvd], std, 0.0)?);
            }
            if c.qk_norm {
                put("self_attn.q_norm.weight", randn(&[c.head_dim], 0.1, 1.0)?);
                put("self_attn.k_norm.weight", randn(&[c.head_dim], 0.1, 1.0)?);
            }
        }
        tensors.insert("model.norm.weight".into(), randn(&[h], 0.1, 1.0)?);
        if !c.tie_word_embeddings {
            tensors.insert(
                "lm_head.weight".into(),
                randn(&[c.vocab_size, h], std, 0.0)?,
            );
        }
        Model::from_named_tensors(c.clone(), tensors, DType::F32, "random")
    }

    /// Every weight with its Hugging Face name (LoRA adapters excluded), for export.
    pub fn named_weights(&self) -> Vec<(String, Var)> {
        let mut out = vec![(
            "model.embed_tokens.weight".to_string(),
            self.embed_tokens.clone(),
        )];
        for (i, l) in self.layers.iter().enumerate() {
            let p = format!("model.layers.{i}");
            out.push((
                format!("{p}.input_layernorm.weight"),
                l.input_layernorm.clone(),
            ));
            for (name, lin) in l.projections() {
                out.push((format!("{p}.{name}.weight"), lin.weight.clone()));
                if let Some(b) = &lin.bias {
                    out.push((format!("{p}.{name}.bias"), b.clone()));
                }
            }
            if let (Some(q), Some(k)) = (&l.q_norm, &l.k_norm) {
                out.push((format!("{p}.self_attn.q_norm.weight"), q.clone()));
                out.push((format!("{p}.self_attn.k_norm.weight"), k.clone()));
            }
            out.push((
                format!("{p}.post_attention_layernorm.weight"),
                l.post_attention_layernorm.clone(),
            ));
        }
        out.push(("model.norm.weight".to_string(), self.norm.clone()));
        if let Some(w) = &self.lm_head {
            out.push(("lm_head.weight".to_string(), w.clone()));
        }
        out
    }

    /// LoRA adapter weights with PEFT-style names (`...q_proj.lora_A.weight`).
    pub fn lora_weights(&self) -> Vec<(String, Var)> {
        let mut out = Vec::new();
        for (i, l) in self.layers.iter().enumerate() {
            for (name, lin) in l.projections() {
                if let Some(a) = &lin.lora {
                    let p = format!("model.layers.{i}.{name}");
                    out.push((format!("{p}.lora_A.weight"), a.a.clone()));
                    out.push((format!("{p}.lora_B.weight"), a.b.clone()));
                }
            }
        }
        out
    }

    /// The variables an optimiser should update: all weights for full fine-tuning, only the LoRA
    /// A/B matrices once an adapter is attached.
    pub fn trainable_vars(&self) -> Vec<(String, Var)> {
        if self.lora_attached {
            self.lora_weights()
        } else {
            self.named_weights()
        }
    }

    /// Attaches LoRA adapters to the named projections of every layer. At attach time B = 0, so
    /// the model's outputs are unchanged.
    pub fn attach_lora(&mut self, cfg: &LoraConfig) -> Result<()> {
        if cfg.rank == 0 {
            return Err(ModelError::Config("lora.rank must be at least 1".into()));
        }
        for t in &cfg.target_modules {
            if !LORA_TARGETS.contains(&t.as_str()) {
                return Err(ModelError::Config(format!(
                    "lora.target_modules: unknown module `{t}` (allowed: {})",
                    LORA_TARGETS.join(", ")
                )));
            }
        }
        let mut rng = init_rng(cfg.seed);
        for l in &mut self.layers {
            for (name, lin) in l.projections_mut() {
                let short = name.rsplit('.').next().unwrap_or(name);
                if cfg.target_modules.iter().any(|t| t == short) {
                    lin.attach_lora(cfg.rank, cfg.alpha, &mut rng)?;
                }
            }
        }
        self.lora_attached = true;
        Ok(())
    }

    /// The same model without its LoRA adapters, sharing the base weights (no copy): under LoRA
    /// those never change, so this is the frozen reference of a KL penalty.
    pub fn without_lora(&self) -> Self {
        let mut m = self.clone();
        for l in &mut m.layers {
            for (_, lin) in l.projections_mut() {
                lin.lora = None;
            }
        }
        m.lora_attached = false;
        m
    }

    /// An independent copy (`clone()` shares the weight storage, since `Var`s are
    /// reference-counted; use this for a frozen reference model).
    pub fn deep_clone(&self) -> Result<Self> {
        self.to_dtype(self.dtype())
    }

    /// An independent copy with every weight cast to `dtype` (f64 for gradient checks).
    pub fn to_dtype(&self, dtype: DType) -> Result<Self> {
        self.map_weights(&|t| t.to_dtype(dtype))
    }

    /// An independent copy with every weight on `device` (see `docs/performance.md`, CUDA).
    pub fn to_device(&self, device: &Device) -> Result<Self> {
        self.map_weights(&|t| t.to_device(device))
    }

    /// An independent copy with `f` applied to every weight, adapters included.
    fn map_weights(&self, f: &dyn Fn(&Tensor) -> candle_core::Result<Tensor>) -> Result<Self> {
        // detach() first so Var::from_tensor copies: the result never shares storage with self.
        let cast = |v: &Var| -> Result<Var> { Ok(Var::from_tensor(&f(&v.as_tensor().detach())?)?) };
        let castl = |l: &Linear| -> Result<Linear> { Ok(l.map_weights(f)?) };
        let layers = self
            .layers
            .iter()
            .map(|l| -> Result<Layer> {
                Ok(Layer {
                    input_layernorm: cast(&l.input_layernorm)?,
                    q_proj: castl(&l.q_proj)?,
                    k_proj: castl(&l.k_proj)?,
                    v_proj: castl(&l.v_proj)?,
                    o_proj: castl(&l.o_proj)?,
                    q_norm: l.q_norm.as_ref().map(cast).transpose()?,
                    k_norm: l.k_norm.as_ref().map(cast).transpose()?,
                    post_attention_layernorm: cast(&l.post_attention_layernorm)?,
                    gate_proj: castl(&l.gate_proj)?,
                    up_proj: castl(&l.up_proj)?,
                    down_proj: castl(&l.down_proj)?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Model {
            config: self.config.clone(),
            embed_tokens: cast(&self.embed_tokens)?,
            layers,
            norm: cast(&self.norm)?,
            lm_head: self.lm_head.as_ref().map(cast).transpose()?,
            lora_attached: self.lora_attached,
            precision: self.precision,
            packed_head: Default::default(),
        })
    }

    /// Architecture family.
    pub fn architecture(&self) -> Architecture {
        self.config.architecture
    }
}

impl Layer {
    /// The seven projections with their Hugging Face sub-names.
    pub fn projections(&self) -> [(&'static str, &Linear); 7] {
        [
            ("self_attn.q_proj", &self.q_proj),
            ("self_attn.k_proj", &self.k_proj),
            ("self_attn.v_proj", &self.v_proj),
            ("self_attn.o_proj", &self.o_proj),
            ("mlp.gate_proj", &self.gate_proj),
            ("mlp.up_proj", &self.up_proj),
            ("mlp.down_proj", &self.down_proj),
        ]
    }

    pub(crate) fn projections_mut(&mut self) -> [(&'static str, &mut Linear); 7] {
        [
            ("self_attn.q_proj", &mut self.q_proj),
            ("self_attn.k_proj", &mut self.k_proj),
            ("self_attn.v_proj", &mut self.v_proj),
            ("self_attn.o_proj", &mut self.o_proj),
            ("mlp.gate_proj", &mut self.gate_proj),
            ("mlp.up_proj", &mut self.up_proj),
            ("mlp.down_proj", &mut self.down_proj),
        ]
    }
}
