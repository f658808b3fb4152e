//! The model's matrices packed once for generation ([`PackedMatrix`]), so no decoding step
//! re-packs them.

use super::Model;
use crate::error::{ModelError, Result};
use crate::ops::PackedMatrix;
use crate::precision::Precision;
use candle_core::DType;

/// The seven projections of one layer, packed.
#[derive(Debug)]
pub(crate) struct PackedLayer {
    pub(crate) q: PackedMatrix,
    pub(crate) k: PackedMatrix,
    pub(crate) v: PackedMatrix,
    pub(crate) o: PackedMatrix,
    pub(crate) gate: PackedMatrix,
    pub(crate) up: PackedMatrix,
    pub(crate) down: PackedMatrix,
}

impl PackedLayer {
    /// The matrices in the order of [`super::Layer::projections`].
    fn matrices(&self) -> [&PackedMatrix; 7] {
        [
            &self.q, &self.k, &self.v, &self.o, &self.gate, &self.up, &self.down,
        ]
    }
}

/// A snapshot of an f32 model's base matrices (every projection and the output head) packed
/// for [`crate::generate::generate_with`]. LoRA adapters, biases and norms are not part of it:
/// generation reads those from the model, so training an adapter leaves a snapshot valid. Any
/// change to a base matrix (a full fine-tuning step, loading weights) needs a new snapshot.
/// Packed in the model's precision ([`Model::set_precision`]): costs as much memory as the
/// matrices themselves in f32, half that in bf16.
#[derive(Debug)]
pub struct DecodeWeights {
    pub(crate) layers: Vec<PackedLayer>,
    pub(crate) head: PackedMatrix,
}

impl DecodeWeights {
    /// Whether packing `model` speeds its generation up: an f32 model on a CPU with the packed
    /// kernel (elsewhere the portable loop is slower than gemm, and GPUs have their own). In
    /// bf16 always on the CPU: unpacked, every product would pack its weight anew.
    pub fn pays_off(model: &Model) -> bool {
        // Not on the path a GPU takes (`with_portable_ops` on the CPU decodes as a GPU does).
        model.dtype() == DType::F32
            && !crate::ops::portable_wanted(model.device())
            && (model.precision == Precision::Bf16 || PackedMatrix::has_fast_kernel())
    }

    /// Packs the current base matrices of an f32 model on the CPU.
    pub fn new(model: &Model) -> Result<Self> {
        if model.dtype() != DType::F32 || !model.device().is_cpu() {
            return Err(ModelError::Input(format!(
                "packed decoding weights need an f32 model on the CPU, not {:?} on {:?}",
                model.dtype(),
                model.device().location()
            )));
        }
        let precision = model.precision;
        let pack =
            |l: &crate::nn::Linear| PackedMatrix::from_tensor_in(l.weight.as_tensor(), precision);
        let layers = model
            .layers
            .iter()
            .map(|l| -> Result<PackedLayer> {
                Ok(PackedLayer {
                    q: pack(&l.q_proj)?,
                    k: pack(&l.k_proj)?,
                    v: pack(&l.v_proj)?,
                    o: pack(&l.o_proj)?,
                    gate: pack(&l.gate_proj)?,
                    up: pack(&l.up_proj)?,
                    down: pack(&l.down_proj)?,
                })
            })
            .collect::<Result<_>>()?;
        let head = PackedMatrix::from_tensor_in(&model.head(false), precision)?;
        Ok(DecodeWeights { layers, head })
    }

    /// An error unless these are packed from a model of `model`'s shape, on the CPU.
    pub(crate) fn check(&self, model: &Model) -> Result<()> {
        if !model.device().is_cpu() {
            return Err(ModelError::Input(
                "packed decoding weights serve a model on the CPU only".into(),
            ));
        }
        if self.head.precision() != model.precision {
            return Err(ModelError::Input(format!(
                "the packed decoding weights are {:?}, the model computes in {:?}: pack them again",
                self.head.precision(),
                model.precision
            )));
        }
        let dims = |p: &PackedMatrix| (p.out_dim(), p.in_dim());
        let same = self.layers.len() == model.layers.len()
            && dims(&self.head) == (model.config.vocab_size, model.config.hidden_size)
            && self.layers.iter().zip(&model.layers).all(|(p, l)| {
                p.matrices()
                    .iter()
                    .zip(l.projections())
                    .all(|(m, (_, lin))| dims(m) == (lin.out_dim(), lin.in_dim()))
            });
        if same {
            Ok(())
        } else {
            Err(ModelError::Input(
                "the packed decoding weights come from a model of another shape".into(),
            ))
        }
    }
}
