//! The vendored candle-core's backward pass (vendor/README.md): the first gradient of a tensor is
//! stored as is rather than added to zeros. Gradients must be those of upstream's sums: checked
//! on expressions where a tensor gets one gradient, several, and a strided (transposed,
//! broadcast) one, against values worked out by hand.

use candle_core::{Device, Tensor, Var};

fn vec2(t: &Tensor) -> Vec<Vec<f64>> {
    t.to_vec2().unwrap()
}

#[test]
fn gradients_of_single_shared_and_strided_uses() {
    let dev = Device::Cpu;
    let x = Var::from_vec(vec![1f64, 2., 3., 4., 5., 6.], (2, 3), &dev).unwrap();
    let w = Var::from_vec(vec![0.5f64, -1., 2.], 3, &dev).unwrap();
    // L = sum(x * x) + sum(x^T) * 3 + sum(x .* w (broadcast)) + sum(narrow(x, cols 1..3))
    let xs = x.as_tensor();
    let l = ((xs * xs).unwrap().sum_all().unwrap()
        + (xs.t().unwrap().sum_all().unwrap() * 3.).unwrap())
    .unwrap();
    let l = (l + xs.broadcast_mul(w.as_tensor()).unwrap().sum_all().unwrap()).unwrap();
    let l = (l + xs.narrow(1, 1, 2).unwrap().sum_all().unwrap()).unwrap();
    let grads = l.backward().unwrap();
    // dL/dx = 2x + 3 + w (per column) + [0, 1, 1] (per column).
    let gx = grads.get(xs).unwrap();
    assert!(gx.is_contiguous());
    let want: Vec<Vec<f64>> = [[1., 2., 3.], [4., 5., 6.]]
        .iter()
        .map(|row| {
            (0..3)
                .map(|c| 2. * row[c] + 3. + [0.5, -1., 2.][c] + [0., 1., 1.][c])
                .collect()
        })
        .collect();
    assert_eq!(vec2(gx), want);
    // dL/dw = column sums of x.
    let gw: Vec<f64> = grads.get(w.as_tensor()).unwrap().to_vec1().unwrap();
    assert_eq!(gw, vec![5., 7., 9.]);
}

#[test]
fn a_gradient_used_once_is_contiguous_and_unshared_sums_are_fresh() {
    let dev = Device::Cpu;
    let a = Var::from_vec(vec![1f64, 2., 3., 4.], (2, 2), &dev).unwrap();
    let b = Var::from_vec(vec![10f64, 20., 30., 40.], (2, 2), &dev).unwrap();
    // y = a^T + b: a's only gradient arrives through a transpose (strided), b's directly.
    let y = (a.as_tensor().t().unwrap() + b.as_tensor()).unwrap();
    let weights = Tensor::from_vec(vec![1f64, 2., 3., 4.], (2, 2), &dev).unwrap();
    let grads = (y * &weights)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let (ga, gb) = (
        grads.get(a.as_tensor()).unwrap(),
        grads.get(b.as_tensor()).unwrap(),
    );
    assert!(ga.is_contiguous() && gb.is_contiguous());
    assert_eq!(vec2(ga), vec![vec![1., 3.], vec![2., 4.]]);
    assert_eq!(vec2(gb), vec![vec![1., 2.], vec![3., 4.]]);
}
