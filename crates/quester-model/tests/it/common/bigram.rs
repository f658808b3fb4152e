//! A tiny differentiable bigram language model: enough to exercise the training machinery
//! (batches, losses, accumulation, clipping, AdamW, checkpoints) independently of the decoder.

use candle_core::{DType, Device, Tensor, Var, D};
use quester_model::train_step::{TrainStepError, TrainableModel};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub struct Bigram {
    pub embed: Var,
    pub head: Var,
}

impl Bigram {
    pub fn new(vocab: usize, hidden: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut r =
            |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random_range(-0.5..0.5)).collect() };
        let embed = Tensor::from_vec(r(vocab * hidden), (vocab, hidden), &Device::Cpu).unwrap();
        let head = Tensor::from_vec(r(vocab * hidden), (vocab, hidden), &Device::Cpu).unwrap();
        Self {
            embed: Var::from_tensor(&embed).unwrap(),
            head: Var::from_tensor(&head).unwrap(),
        }
    }
}

impl TrainableModel for Bigram {
    fn token_logprobs(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        targets_from: usize,
    ) -> Result<Tensor, TrainStepError> {
        let (b, t) = ids.dims2()?;
        let n = t - targets_from;
        let prev = ids.narrow(1, targets_from - 1, n)?.flatten_all()?;
        let next = ids.narrow(1, targets_from, n)?.flatten_all()?;
        let h = self.embed.as_tensor().index_select(&prev, 0)?;
        let logits = h.matmul(&self.head.as_tensor().t()?)?;
        let lsm = candle_nn::ops::log_softmax(&logits, D::Minus1)?;
        let lp = lsm.gather(&next.unsqueeze(1)?, 1)?.reshape((b, n))?;
        let m = mask.narrow(1, targets_from, n)?.to_dtype(DType::F32)?;
        Ok((lp * m)?)
    }

    fn trainable_vars(&self) -> Vec<(String, Var)> {
        vec![
            ("embed".to_string(), self.embed.clone()),
            ("head".to_string(), self.head.clone()),
        ]
    }
}
