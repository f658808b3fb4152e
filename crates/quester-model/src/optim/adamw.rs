//! AdamW (Loshchilov & Hutter): Adam moments with bias correction and weight decay applied to the
//! parameter directly instead of through the gradient.
//!
//! One step, per element, with `g` the gradient times the clipping scale:
//! `p <- p * (1 - lr * wd)`, `m <- b1 m + (1 - b1) g`, `v <- b2 v + (1 - b2) g^2`,
//! `p <- p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)`
//! (the same formula as `candle_nn::AdamW` and `torch.optim.AdamW`).
//!
//! On the CPU the update of `p`, `m` and `v` is one fused pass over the f32 slices, split across
//! rayon threads. Moments live in plain `Vec<f32>` (they never take part in autograd) and the
//! parameter is written in place through an in-place custom op, so no tensor is allocated per
//! step. On a GPU the moments live on the device beside the parameter and the update is two
//! in-place kernels ([`super::adamw_device`]): nothing crosses to the host.

use super::adamw_device::{slice, slice_mut, Consts, MomentsOp, ParamOp};
use super::OptimError;
use candle_core::backprop::GradStore;
use candle_core::{CpuStorage, DType, Device, InplaceOp2, Layout, Tensor, Var};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::sync::Mutex;

/// Elements per rayon task: large enough to amortise scheduling, small enough to balance.
const CHUNK: usize = 1 << 14;

/// AdamW hyper-parameters. Defaults are LaMer's (lr 1e-6, weight decay 0.01) with torch's betas
/// and epsilon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdamWConfig {
    /// Peak learning rate (a schedule scales it per step).
    pub lr: f64,
    /// Decay of the first moment.
    pub beta1: f64,
    /// Decay of the second moment.
    pub beta2: f64,
    /// Added to the denominator for stability.
    pub eps: f64,
    /// Decoupled weight decay coefficient (multiplied by the current learning rate).
    pub weight_decay: f64,
}

impl Default for AdamWConfig {
    fn default() -> Self {
        Self {
            lr: 1e-6,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
        }
    }
}

impl AdamWConfig {
    /// Checks the ranges, naming the offending key.
    pub fn validate(&self) -> Result<(), String> {
        let check = |ok: bool, key: &str, allowed: &str, v: f64| {
            if ok {
                Ok(())
            } else {
                Err(format!("optimizer.{key} = {v}: must be {allowed}"))
            }
        };
        check(self.lr.is_finite() && self.lr >= 0.0, "lr", ">= 0", self.lr)?;
        check(
            (0.0..1.0).contains(&self.beta1),
            "beta1",
            "in [0, 1)",
            self.beta1,
        )?;
        check(
            (0.0..1.0).contains(&self.beta2),
            "beta2",
            "in [0, 1)",
            self.beta2,
        )?;
        check(
            self.eps.is_finite() && self.eps > 0.0,
            "eps",
            "> 0",
            self.eps,
        )?;
        check(
            self.weight_decay.is_finite() && self.weight_decay >= 0.0,
            "weight_decay",
            ">= 0",
            self.weight_decay,
        )
    }
}

/// The two moment buffers of one parameter (same length as the parameter).
#[derive(Debug, Clone, PartialEq)]
pub struct MomentState {
    /// Parameter name (as given to [`AdamW::new`]).
    pub name: String,
    /// Parameter shape.
    pub shape: Vec<usize>,
    /// First moment.
    pub m: Vec<f32>,
    /// Second moment.
    pub v: Vec<f32>,
}

/// Everything AdamW needs to resume exactly: the step count and every parameter's moments.
#[derive(Debug, Clone, PartialEq)]
pub struct AdamWState {
    /// Number of updates applied so far (drives the bias correction).
    pub step: u64,
    /// One entry per parameter, in the optimiser's order.
    pub moments: Vec<MomentState>,
}

struct Slot {
    name: String,
    var: Var,
    store: Store,
}

/// Where a parameter's moments live.
enum Store {
    /// In host memory, updated by the fused host pass (CPU parameters).
    Host(MomentState),
    /// On the parameter's device as one tensor [2n]: m, then v (see `adamw_device`).
    Device { mv: Tensor },
}

impl Slot {
    fn shape(&self) -> &[usize] {
        self.var.dims()
    }

    /// The moments as host vectors (a copy from the device for device moments).
    fn moments(&self) -> Result<Cow<'_, MomentState>, OptimError> {
        match &self.store {
            Store::Host(m) => Ok(Cow::Borrowed(m)),
            Store::Device { mv } => {
                let mut all = mv.to_vec1::<f32>()?;
                let v = all.split_off(all.len() / 2);
                Ok(Cow::Owned(MomentState {
                    name: self.name.clone(),
                    shape: self.shape().to_vec(),
                    m: all,
                    v,
                }))
            }
        }
    }
}

/// Fused AdamW over named f32 variables: multi-threaded on the CPU, two kernels per parameter
/// on a GPU.
pub struct AdamW {
    config: AdamWConfig,
    lr: f64,
    step: u64,
    slots: Vec<Slot>,
}

impl AdamW {
    /// Creates the optimiser with zero moments. Every variable must be f32 and names must be
    /// unique. The moments of a CPU variable live in host memory; those of a variable on another
    /// device (CUDA) live on that device (as they do on the CPU inside
    /// [`crate::ops::with_portable_ops`], which is how the CPU tests check that path).
    pub fn new(params: Vec<(String, Var)>, config: AdamWConfig) -> Result<Self, OptimError> {
        config.validate().map_err(|what| OptimError::Param {
            name: "<config>".into(),
            what,
        })?;
        let mut seen = std::collections::HashSet::new();
        let mut slots = Vec::with_capacity(params.len());
        for (name, var) in params {
            if !seen.insert(name.clone()) {
                return Err(OptimError::Param {
                    name,
                    what: "given twice".into(),
                });
            }
            if var.dtype() != DType::F32 {
                return Err(OptimError::Param {
                    name,
                    what: format!("the fused AdamW needs f32, got {:?}", var.dtype()),
                });
            }
            let n = var.elem_count();
            let shape = var.dims().to_vec();
            let store = if crate::ops::portable_wanted(var.device()) {
                Store::Device {
                    mv: Tensor::zeros(2 * n, DType::F32, var.device())?,
                }
            } else {
                Store::Host(MomentState {
                    name: name.clone(),
                    shape,
                    m: vec![0.0; n],
                    v: vec![0.0; n],
                })
            };
            slots.push(Slot { store, name, var });
        }
        Ok(Self {
            lr: config.lr,
            config,
            step: 0,
            slots,
        })
    }

    /// The hyper-parameters.
    pub fn config(&self) -> &AdamWConfig {
        &self.config
    }

    /// The learning rate used by the next step.
    pub fn lr(&self) -> f64 {
        self.lr
    }

    /// Sets the learning rate of the next steps (from a schedule).
    pub fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }

    /// Number of updates applied so far.
    pub fn step_count(&self) -> u64 {
        self.step
    }

    /// The optimised variables with their names, in order.
    pub fn params(&self) -> Vec<(String, Var)> {
        self.slots
            .iter()
            .map(|s| (s.name.clone(), s.var.clone()))
            .collect()
    }

    /// A copy of the state for checkpoints (device moments are copied to the host).
    pub fn state(&self) -> Result<AdamWState, OptimError> {
        Ok(AdamWState {
            step: self.step,
            moments: self.moments()?.into_iter().map(Cow::into_owned).collect(),
        })
    }

    /// The moments, borrowed where they live in host memory (no copy when writing a checkpoint)
    /// and copied from the device where they do not.
    pub fn moments(&self) -> Result<Vec<Cow<'_, MomentState>>, OptimError> {
        self.slots.iter().map(Slot::moments).collect()
    }

    /// Replaces the state. Every parameter must be present by name with the same shape.
    pub fn load_state(&mut self, state: AdamWState) -> Result<(), OptimError> {
        let mut by_name: std::collections::HashMap<String, MomentState> = state
            .moments
            .into_iter()
            .map(|m| (m.name.clone(), m))
            .collect();
        let mut next = Vec::with_capacity(self.slots.len());
        for slot in &self.slots {
            let m = by_name.remove(&slot.name).ok_or_else(|| {
                OptimError::StateMismatch(format!("no moments for parameter `{}`", slot.name))
            })?;
            let n = slot.var.elem_count();
            if m.shape != slot.shape() || m.m.len() != n || m.v.len() != n {
                return Err(OptimError::StateMismatch(format!(
                    "parameter `{}` has shape {:?}, saved moments have shape {:?}",
                    slot.name,
                    slot.shape(),
                    m.shape
                )));
            }
            next.push(m);
        }
        if let Some(extra) = by_name.keys().next() {
            return Err(OptimError::StateMismatch(format!(
                "saved moments for `{extra}`, which is not an optimised parameter"
            )));
        }
        for (slot, m) in self.slots.iter_mut().zip(next) {
            match &mut slot.store {
                Store::Host(host) => *host = m,
                Store::Device { mv } => {
                    let all = [m.m, m.v].concat();
                    *mv = Tensor::from_vec(all, mv.dims(), mv.device())?;
                }
            }
        }
        self.step = state.step;
        Ok(())
    }

    /// Applies one update from `grads`, each gradient multiplied by `grad_scale` first (the
    /// clipping coefficient, 1.0 for none). Parameters without a gradient are left unchanged.
    pub fn step(&mut self, grads: &GradStore, grad_scale: f32) -> Result<(), OptimError> {
        self.step += 1;
        let t = i32::try_from(self.step).unwrap_or(i32::MAX);
        let c = &self.config;
        let consts = Consts {
            decay: (1.0 - self.lr * c.weight_decay) as f32,
            b1: c.beta1 as f32,
            b2: c.beta2 as f32,
            one_minus_b1: (1.0 - c.beta1) as f32,
            one_minus_b2: (1.0 - c.beta2) as f32,
            inv_bc1: (1.0 / (1.0 - c.beta1.powi(t))) as f32,
            inv_bc2: (1.0 / (1.0 - c.beta2.powi(t))) as f32,
            lr: self.lr as f32,
            eps: c.eps as f32,
            scale: grad_scale,
        };
        for slot in &mut self.slots {
            let Some(g) = grads.get(slot.var.as_tensor()) else {
                continue;
            };
            let g = contiguous_f32(g, &slot.name)?;
            if g.dims() != slot.var.dims() {
                return Err(OptimError::Param {
                    name: slot.name.clone(),
                    what: format!(
                        "gradient shape {:?} differs from the parameter's {:?}",
                        g.dims(),
                        slot.var.dims()
                    ),
                });
            }
            let param = slot.var.as_tensor();
            match &mut slot.store {
                Store::Host(host) => {
                    let kernel = Kernel {
                        m: Mutex::new(&mut host.m),
                        v: Mutex::new(&mut host.v),
                        c: consts,
                    };
                    if param.device().is_cpu() {
                        param.inplace_op2(&g, &kernel)?;
                    } else {
                        // Host moments for a device parameter (a checkpoint loaded before the
                        // move): the fused pass on a host copy.
                        let host = param.to_device(&Device::Cpu)?;
                        host.inplace_op2(&g.to_device(&Device::Cpu)?, &kernel)?;
                        slot.var.set(&host.to_device(param.device())?)?;
                    }
                }
                Store::Device { mv } => {
                    mv.inplace_op2(&g, &MomentsOp(consts))?;
                    param.inplace_op2(mv, &ParamOp(consts))?;
                }
            }
        }
        Ok(())
    }
}

/// Returns the gradient as a contiguous f32 tensor (copying only when needed).
fn contiguous_f32(g: &Tensor, name: &str) -> Result<Tensor, OptimError> {
    if g.dtype() != DType::F32 {
        return Err(OptimError::Param {
            name: name.to_string(),
            what: format!("gradient has dtype {:?}, expected f32", g.dtype()),
        });
    }
    Ok(g.contiguous()?)
}

struct Kernel<'a> {
    m: Mutex<&'a mut Vec<f32>>,
    v: Mutex<&'a mut Vec<f32>>,
    c: Consts,
}

impl InplaceOp2 for Kernel<'_> {
    fn name(&self) -> &'static str {
        "fused-adamw"
    }

    fn cpu_fwd(
        &self,
        s1: &mut CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<()> {
        let p = slice_mut(s1, l1, "the parameter")?;
        let g = slice(s2, l2, "the gradient")?;
        let mut m = self
            .m
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut v = self
            .v
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if g.len() != p.len() || m.len() != p.len() || v.len() != p.len() {
            candle_core::bail!(
                "fused-adamw: lengths differ (param {}, grad {}, m {}, v {})",
                p.len(),
                g.len(),
                m.len(),
                v.len()
            )
        }
        let c = self.c;
        p.par_chunks_mut(CHUNK)
            .zip(m.par_chunks_mut(CHUNK))
            .zip(v.par_chunks_mut(CHUNK))
            .zip(g.par_chunks(CHUNK))
            .for_each(|(((p, m), v), g)| update(p, m, v, g, c));
        Ok(())
    }
}

#[inline]
fn update(p: &mut [f32], m: &mut [f32], v: &mut [f32], g: &[f32], c: Consts) {
    for (((p, m), v), &g) in p.iter_mut().zip(m).zip(v).zip(g) {
        let g = g * c.scale;
        *m = c.b1 * *m + c.one_minus_b1 * g;
        *v = c.b2 * *v + c.one_minus_b2 * (g * g);
        let m_hat = *m * c.inv_bc1;
        let v_hat = *v * c.inv_bc2;
        *p = *p * c.decay - c.lr * (m_hat / (v_hat.sqrt() + c.eps));
    }
}
