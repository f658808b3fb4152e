//! Finite-difference checking of gradients, used by the tests of every custom op and of the
//! whole model (run in f64 on tiny shapes).

use candle_core::{bail, DType, Result, Tensor, Var};

/// Compares the autograd gradient of the scalar `f(inputs)` with central finite differences for
/// every element of every input (at most 64 elements per input, spread evenly). Inputs should be
/// f64. Fails when `|auto - numeric| > tol * (1 + |numeric|)`.
pub fn check_gradients<F>(inputs: &[Tensor], f: F, tol: f64) -> Result<()>
where
    F: Fn(&[Tensor]) -> Result<Tensor>,
{
    let vars: Vec<Var> = inputs
        .iter()
        .map(|t| Var::from_tensor(&t.to_dtype(DType::F64)?))
        .collect::<Result<_>>()?;
    let tensors: Vec<Tensor> = vars.iter().map(|v| v.as_tensor().clone()).collect();
    let loss = f(&tensors)?;
    let grads = loss.backward()?;
    let h = 1e-6;
    for (k, var) in vars.iter().enumerate() {
        let base: Vec<f64> = var.as_tensor().flatten_all()?.to_vec1()?;
        let auto: Vec<f64> = match grads.get(var.as_tensor()) {
            Some(g) => g.flatten_all()?.to_vec1()?,
            None => vec![0.0; base.len()],
        };
        let step = (base.len() / 64).max(1);
        for i in (0..base.len()).step_by(step) {
            let eval = |delta: f64| -> Result<f64> {
                let mut v = base.clone();
                v[i] += delta;
                let t = Tensor::from_vec(v, var.as_tensor().shape(), var.as_tensor().device())?;
                let mut ins: Vec<Tensor> = vars.iter().map(|v| v.as_tensor().detach()).collect();
                ins[k] = t;
                f(&ins)?.to_scalar::<f64>()
            };
            let numeric = (eval(h)? - eval(-h)?) / (2.0 * h);
            if (auto[i] - numeric).abs() > tol * (1.0 + numeric.abs()) {
                bail!(
                    "gradient mismatch for input {k} element {i}: autograd {} vs finite differences {numeric}",
                    auto[i]
                );
            }
        }
    }
    Ok(())
}

/// Like [`check_gradients`] but for variables captured by `f` (for example a model's weights):
/// the variables are perturbed in place with `Var::set` and restored afterwards. Checks at most
/// `per_var` elements of each variable.
pub fn check_var_gradients<F>(vars: &[(String, Var)], f: F, per_var: usize, tol: f64) -> Result<()>
where
    F: Fn() -> Result<Tensor>,
{
    let loss = f()?;
    let grads = loss.backward()?;
    let h = 1e-6;
    for (name, var) in vars {
        if var.dtype() != DType::F64 {
            bail!(
                "check_var_gradients needs f64 variables, `{name}` is {:?}",
                var.dtype()
            );
        }
        let original = var.as_tensor().copy()?;
        let base: Vec<f64> = original.flatten_all()?.to_vec1()?;
        let auto: Vec<f64> = match grads.get(var.as_tensor()) {
            Some(g) => g.flatten_all()?.to_vec1()?,
            None => vec![0.0; base.len()],
        };
        let step = (base.len() / per_var.max(1)).max(1);
        for i in (0..base.len()).step_by(step) {
            let eval = |delta: f64| -> Result<f64> {
                let mut v = base.clone();
                v[i] += delta;
                var.set(&Tensor::from_vec(v, original.shape(), original.device())?)?;
                f()?.to_scalar::<f64>()
            };
            let numeric = (eval(h)? - eval(-h)?) / (2.0 * h);
            var.set(&original)?;
            if (auto[i] - numeric).abs() > tol * (1.0 + numeric.abs()) {
                bail!(
                    "gradient mismatch for `{name}` element {i}: autograd {} vs finite differences {numeric}",
                    auto[i]
                );
            }
        }
    }
    Ok(())
}
