"""tf.linalg: matrix products, decompositions and solves over batches of matrices (the last two axes). Forwards are
NumPy's LAPACK; gradients are written with lockstep ops, so they are themselves differentiable."""
import builtins as _builtins

import numpy as _np

from . import _array_ops, _core, _lockstep, _unimplemented, math as _math

_ops = _lockstep.ops
_convert = _ops.convert_to_tensor
_invalid, _numpy_op = _math._invalid, _math._numpy_op

einsum, eye, tensordot = _array_ops.einsum, _array_ops.eye, _array_ops.tensordot
l2_normalize = _math.l2_normalize


def _matrices(name, x, square=False):
    x = _convert(x)
    shape = x._shape_tuple
    if len(shape) < 2 or (square and shape[-1] != shape[-2]):
        raise _invalid(f"tf.linalg.{name} needs {'square ' if square else ''}matrices (a tensor of rank >= 2 whose "
                       f"last two dims are the matrix{', equal' if square else ''}), got shape {shape}")
    if not x.dtype.is_floating:
        raise _invalid(f"tf.linalg.{name} needs float32 or float64 matrices, got {x.dtype.name}: cast with tf.cast")
    return x


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    a = _convert(a)
    rank = len(a._shape_tuple)
    if rank < 2:
        raise ValueError(f"tf.linalg.matrix_transpose needs a tensor of rank >= 2, got shape {a._shape_tuple}")
    return _ops.transpose(a, list(_builtins.range(rank - 2)) + [rank - 1, rank - 2])


def adjoint(matrix, name=None):
    return matrix_transpose(matrix)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, a_is_sparse=False,
           b_is_sparse=False, output_type=None, grad_a=False, grad_b=False, name=None):
    return _core.matmul(a, b, transpose_a or adjoint_a, transpose_b or adjoint_b)


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False, name=None):
    b = _convert(b)
    out = _core.matmul(a, _ops.reshape(b, b._shape_tuple + [1]), transpose_a or adjoint_a)
    return _ops.reshape(out, out._shape_tuple[:-1])


def _diag_positions(shape, k=0):
    """Flat positions of the k-th diagonals of a batch of matrices: shape[:-2] + [diagonal length]."""
    rows, cols = shape[-2], shape[-1]
    n = _builtins.max(0, _builtins.min(rows, cols - k) if k >= 0 else _builtins.min(rows + k, cols))
    i = _np.arange(n) + (0 if k >= 0 else -k)
    src = _np.arange(int(_np.prod(shape, dtype=_np.int64))).reshape(shape)
    return src[..., i, i + k]


def diag_part(input, name="diag_part", k=0, padding_value=0, align="RIGHT_LEFT"):  # noqa: A002
    x = _convert(input)
    if len(x._shape_tuple) < 2:
        raise ValueError(f"tf.linalg.diag_part needs matrices, got shape {x._shape_tuple}")
    if not isinstance(k, int):
        raise NotImplementedError("tf.linalg.diag_part with a range of diagonals k=(lo, hi) is not implemented by "
                                  "lockstep (see docs/python.md)")
    return _array_ops._gather_flat(x, _diag_positions(x._shape_tuple, k))


def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0, align="RIGHT_LEFT"):
    """Batches of matrices with `diagonal` on their k-th diagonal and padding_value elsewhere."""
    d = _convert(diagonal)
    if not d._shape_tuple:
        raise ValueError("tf.linalg.diag needs a tensor of rank >= 1, got a scalar")
    if not isinstance(k, int):
        raise NotImplementedError("tf.linalg.diag with a range of diagonals k=(lo, hi) is not implemented by "
                                  "lockstep (see docs/python.md)")
    n = d._shape_tuple[-1]
    rows = n + _builtins.abs(k) if num_rows in (-1, None) else int(num_rows)
    cols = n + _builtins.abs(k) if num_cols in (-1, None) else int(num_cols)
    shape = d._shape_tuple[:-1] + [rows, cols]
    target = _diag_positions(shape, k)
    if target.shape[-1] != n:
        raise _invalid(f"tf.linalg.diag: a diagonal of length {n} does not fit a {rows} x {cols} matrix at k={k}")
    positions = _np.full(shape, -1, _np.int64).reshape(-1)
    positions[target.reshape(-1)] = _np.arange(int(_np.prod(d._shape_tuple, dtype=_np.int64)))
    return _array_ops._gather_flat(d, positions.reshape(shape), padding_value)


def set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT"):  # noqa: A002
    x = _convert(input)
    d = _convert(diagonal, dtype_hint=x.dtype)
    shape = x._shape_tuple
    target = _diag_positions(shape, k)
    if d._shape_tuple != list(target.shape):
        raise _invalid(f"tf.linalg.set_diag: the diagonal must have shape {list(target.shape)}, got {d._shape_tuple}")
    off = _np.ones(shape, x.dtype.as_numpy_dtype)
    off.reshape(-1)[target.reshape(-1)] = 0
    return _ops.add(_ops.multiply(x, _convert(off)), diag(d, k=k, num_rows=shape[-2], num_cols=shape[-1]))


def band_part(input, num_lower, num_upper, name=None):  # noqa: A002
    x = _convert(input)
    rows, cols = x._shape_tuple[-2:]
    i, j = _np.arange(rows)[:, None], _np.arange(cols)[None, :]
    lower, upper = int(num_lower), int(num_upper)
    keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    return _ops.multiply(x, _convert(keep.astype(x.dtype.as_numpy_dtype or _np.float32), x.dtype))


def trace(x, name=None):
    return _ops.reduce_sum(diag_part(x), [-1], False)


def tensor_diag(diagonal, name=None):
    d = _convert(diagonal)
    shape = d._shape_tuple
    n = int(_np.prod(shape, dtype=_np.int64))
    positions = _np.full((n, n), -1, _np.int64)
    positions[_np.arange(n), _np.arange(n)] = _np.arange(n)
    return _array_ops._gather_flat(d, positions.reshape(shape + shape))


def tensor_diag_part(input, name=None):  # noqa: A002
    x = _convert(input)
    shape = x._shape_tuple
    half = len(shape) // 2
    if len(shape) % 2 or shape[:half] != shape[half:]:
        raise _invalid(f"tf.linalg.tensor_diag_part needs a shape [d..., d...], got {shape}")
    n = int(_np.prod(shape[:half], dtype=_np.int64))
    return _array_ops._gather_flat(x, (_np.arange(n) * (n + 1)).reshape(shape[:half]))


def _solve_numpy(a, b):
    try:
        return _np.linalg.solve(a, b)
    except _np.linalg.LinAlgError:
        raise _invalid("tf.linalg: the matrix is not invertible") from None


def inv(input, adjoint=False, name=None):  # noqa: A002
    x = _matrices("inv", input, square=True)
    if adjoint:
        x = matrix_transpose(x)

    def forward(a):
        try:
            return _np.linalg.inv(a)
        except _np.linalg.LinAlgError:
            raise _invalid("tf.linalg.inv: Input is not invertible.") from None

    # d(A^-1) = -A^-1 dA A^-1, so dA = -A^-T dY A^-T
    return _numpy_op(forward, [x], lambda dy, y, x: [_ops.negative(matmul(matmul(y, dy, transpose_a=True), y,
                                                                          transpose_b=True))])


def solve(matrix, rhs, adjoint=False, name=None):
    a = _matrices("solve", matrix, square=True)
    b = _convert(rhs, dtype_hint=a.dtype)
    if adjoint:
        a = matrix_transpose(a)
    if b._shape_tuple[-2:-1] != a._shape_tuple[-1:]:
        raise _invalid(f"tf.linalg.solve: rhs of shape {b._shape_tuple} needs {a._shape_tuple[-1]} rows for a "
                       f"matrix of shape {a._shape_tuple}")

    def backward(dx, x, a, b):  # x = A^-1 b: db = A^-T dx, dA = -db x^T
        db = solve(a, dx, adjoint=True)
        return [_math._unbroadcast(_ops.negative(matmul(db, x, transpose_b=True)), a._shape_tuple),
                _math._unbroadcast(db, b._shape_tuple)]

    return _numpy_op(_solve_numpy, [a, b], backward)


def det(input, name=None):  # noqa: A002
    x = _matrices("det", input, square=True)
    # d det(A) = det(A) A^-T
    return _numpy_op(_np.linalg.det, [x], lambda dy, y, x: [_ops.multiply(
        _ops.reshape(_ops.multiply(dy, y), dy._shape_tuple + [1, 1]), matrix_transpose(inv(x)))])


def slogdet(input, name=None):  # noqa: A002
    x = _matrices("slogdet", input, square=True)
    sign, _ = _np.linalg.slogdet(x.numpy())
    log_abs = _numpy_op(lambda a: _np.linalg.slogdet(a)[1], [x], lambda dy, y, x: [_ops.multiply(
        _ops.reshape(dy, dy._shape_tuple + [1, 1]), matrix_transpose(inv(x)))])
    return _convert(sign.astype(x.dtype.as_numpy_dtype), x.dtype), log_abs


def logdet(matrix, name=None):
    """log det of a Hermitian positive definite matrix, through its Cholesky factor: 2 sum log diag(L)."""
    return _ops.multiply(_ops.reduce_sum(_ops.log(diag_part(cholesky(matrix))), [-1], False), 2.0)


def cholesky(input, name=None):  # noqa: A002
    x = _matrices("cholesky", input, square=True)

    def forward(a):
        try:
            return _np.linalg.cholesky(a)
        except _np.linalg.LinAlgError:
            raise _invalid("tf.linalg.cholesky: Cholesky decomposition was not successful. The input might not be "
                           "valid.") from None

    def backward(dl, l, x):
        # With A = L L^T: dA = 1/2 L^-T Phi(L^T dL) L^-1, symmetrised, Phi taking the lower triangle with the
        # diagonal halved.
        l_inv = inv(l)
        middle = matmul(l, dl, transpose_a=True)
        middle = band_part(_ops.subtract(middle, _ops.multiply(diag(diag_part(middle)), 0.5)), -1, 0)
        grad = matmul(matmul(l_inv, middle, transpose_a=True), l_inv)
        return [_ops.multiply(_ops.add(grad, matrix_transpose(grad)), 0.5)]

    return _numpy_op(forward, [x], backward)


def _no_gradient(name):
    def backward(*args):
        raise NotImplementedError(f"the gradient of tf.linalg.{name} is not implemented by lockstep "
                                  "(see docs/python.md)")

    return backward


def qr(input, full_matrices=False, name=None):  # noqa: A002
    x = _matrices("qr", input)
    q, r = _np.linalg.qr(x.numpy(), mode="complete" if full_matrices else "reduced")
    return (_numpy_op(lambda a: q, [x], _no_gradient("qr")), _numpy_op(lambda a: r, [x], _no_gradient("qr")))


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """(s, u, v) as TF orders them, v not transposed; no gradient."""
    x = _matrices("svd", tensor)
    if not compute_uv:
        return _numpy_op(lambda a: _np.linalg.svd(a, compute_uv=False), [x], _no_gradient("svd"))
    u, s, vh = _np.linalg.svd(x.numpy(), full_matrices=full_matrices)
    v = _np.swapaxes(vh, -1, -2)
    return tuple(_numpy_op(lambda a, r=r: r, [x], _no_gradient("svd")) for r in (s, u, v))


def eigh(tensor, name=None):
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices, from the lower triangle as TF's."""
    x = _matrices("eigh", tensor, square=True)
    e, v = _np.linalg.eigh(x.numpy())

    def lower(grad):  # eigh reads the lower triangle: an off-diagonal element stands for both of its places
        both = _ops.add(grad, matrix_transpose(grad))
        return band_part(_ops.subtract(both, _ops.multiply(diag(diag_part(both)), 0.5)), -1, 0)

    def backward_values(de, e_t, x):  # dA = V diag(de) V^T
        return [lower(matmul(_ops.multiply(vectors, _ops.reshape(de, de._shape_tuple[:-1] + [1, de._shape_tuple[-1]])),
                             vectors, transpose_b=True))]

    def backward_vectors(dv, v_t, x):  # dA = V (F o V^T dV) V^T, F_ij = 1 / (e_j - e_i) off the diagonal
        gap = e[..., None, :] - e[..., :, None]
        with _np.errstate(divide="ignore"):
            f = _np.where(_np.eye(e.shape[-1], dtype=bool), 0.0, 1.0 / _np.where(gap == 0, _np.inf, gap))
        inner = _ops.multiply(_convert(f.astype(e.dtype), x.dtype), matmul(vectors, dv, transpose_a=True))
        return [lower(matmul(matmul(vectors, inner), vectors, transpose_b=True))]

    vectors = _numpy_op(lambda a: v, [x], backward_vectors)
    values = _numpy_op(lambda a: e, [x], backward_values)
    return values, vectors


def eigvalsh(tensor, name=None):
    return eigh(tensor)[0]


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002
    """Vector norms (axis an int or None) and matrix norms (axis a pair): 'euclidean'/'fro', 1, 2 (vectors), inf
    and any p > 0 for vectors."""
    x = _convert(tensor)
    rank = len(x._shape_tuple)
    keep = bool(keepdims)
    matrix = axis is not None and not isinstance(axis, int) and len(axis) == 2
    if matrix:
        rows, cols = (int(a) % rank for a in axis)
        if ord in ("euclidean", "fro"):
            return _ops.sqrt(_ops.reduce_sum(_ops.square(x), [rows, cols], keep))
        if ord in (1, _np.inf):
            summed, other = (rows, cols) if ord == 1 else (cols, rows)
            sums = _ops.reduce_sum(_ops.abs(x), [summed], True)
            out = _ops.reduce_max(sums, [other], True)
            kept = [d for i, d in enumerate(x._shape_tuple) if i not in (rows, cols)]
            return out if keep else _ops.reshape(out, kept)
        raise NotImplementedError(f"tf.norm of matrices with ord={ord!r} is not implemented by lockstep "
                                  "(see docs/python.md)")
    axes = None if axis is None else [int(a) for a in (_np.ravel(axis))]
    if ord in ("euclidean", "fro", 2, 2.0):
        return _ops.sqrt(_ops.reduce_sum(_ops.square(x), axes, keep))
    if ord in (1, 1.0):
        return _ops.reduce_sum(_ops.abs(x), axes, keep)
    if ord == _np.inf:
        return _ops.reduce_max(_ops.abs(x), axes, keep)
    if isinstance(ord, (int, float)) and ord > 0:
        return _ops.pow(_ops.reduce_sum(_ops.pow(_ops.abs(x), float(ord)), axes, keep), 1.0 / ord)
    raise ValueError(f"tf.norm's ord must be 'euclidean', 'fro', 1, 2, np.inf or a number > 0, got {ord!r}")


def global_norm(t_list, name=None):
    present = [_convert(t) for t in t_list if t is not None]
    return _ops.sqrt(_ops.add_n([_ops.reduce_sum(_ops.square(t)) for t in present]))


def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """min ||A x - b||^2 + l2 ||x||^2 by the normal equations (TF's fast path), differentiable through solve."""
    if not fast:
        raise NotImplementedError("tf.linalg.lstsq with fast=False is not implemented by lockstep (see docs/python.md)")
    a = _matrices("lstsq", matrix)
    b = _convert(rhs, dtype_hint=a.dtype)
    rows, cols = a._shape_tuple[-2:]
    reg = float(l2_regularizer)
    if rows >= cols:
        gram = matmul(a, a, transpose_a=True)
        if reg:
            gram = _ops.add(gram, _ops.multiply(eye(cols, dtype=a.dtype), reg))
        return solve(gram, matmul(a, b, transpose_a=True))
    gram = matmul(a, a, transpose_b=True)
    if reg:
        gram = _ops.add(gram, _ops.multiply(eye(rows, dtype=a.dtype), reg))
    return matmul(a, solve(gram, b), transpose_a=True)


def pinv(a, rcond=None, validate_args=False, name=None):
    x = _matrices("pinv", a)
    return _numpy_op(lambda m: _np.linalg.pinv(m, rcond=1e-15 if rcond is None else rcond), [x],
                     _no_gradient("pinv"))


def cross(a, b, name=None):
    a, b = _math._operands("cross", a, b)
    return _numpy_op(_np.cross, [a, b], lambda dy, y, a, b: [cross(b, dy), cross(dy, a)])


def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    a = band_part(_matrices("triangular_solve", matrix, square=True), -1, 0) if lower else band_part(
        _matrices("triangular_solve", matrix, square=True), 0, -1)
    return solve(a, rhs, adjoint=adjoint)


def cholesky_solve(chol, rhs, name=None):
    y = triangular_solve(chol, rhs, lower=True)
    return triangular_solve(chol, y, lower=True, adjoint=True)


def normalize(tensor, ord="euclidean", axis=None, name=None):  # noqa: A002
    n = norm(tensor, ord, axis, keepdims=True)
    return _ops.divide(tensor, n), n


_unimplemented.install(globals(), "tf.linalg")
