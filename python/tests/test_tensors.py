"""Tensors and NumPy, and keras.ops against NumPy's results."""
import unittest

import numpy as np

import chorus
from chorus import keras
from chorus.keras import ops


class TensorTest(unittest.TestCase):
    def test_numpy_views_share_the_tensors_memory(self):
        t = ops.convert_to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
        a, b = np.asarray(t), np.asarray(t)
        self.assertTrue(np.shares_memory(a, b))
        self.assertEqual(a.shape, (2, 3))
        np.testing.assert_array_equal(a, np.arange(6).reshape(2, 3))

    def test_a_view_keeps_the_storage_alive(self):
        a = np.asarray(ops.add(np.ones(1000, np.float32), 2.0))
        del_ = [np.ones(1000, np.float32) for _ in range(10)]  # reuse the allocator
        self.assertEqual(len(del_), 10)
        np.testing.assert_array_equal(a, np.full(1000, 3.0, np.float32))

    def test_dtypes_follow_keras_conversions(self):
        self.assertEqual(ops.convert_to_tensor(np.zeros(2)).dtype, "float32")  # float64 -> floatx
        self.assertEqual(ops.convert_to_tensor([1, 2]).dtype, "int32")  # Python ints
        self.assertEqual(ops.convert_to_tensor(np.array([1, 2], np.int64)).dtype, "int64")
        self.assertEqual(ops.convert_to_tensor(np.array([1], np.uint8)).dtype, "uint8")
        self.assertEqual(ops.convert_to_tensor(np.array([True])).dtype, "bool")
        self.assertEqual(ops.convert_to_tensor([3], dtype="float32").dtype, "float32")
        strings = ops.convert_to_tensor(np.array([b"a", "\u00e9"], dtype=object))
        self.assertEqual(strings.dtype, "string")
        self.assertEqual(list(ops.convert_to_numpy(strings)), [b"a", "\u00e9".encode()])

    def test_python_numbers_take_the_tensors_dtype(self):
        x = ops.convert_to_tensor(np.array([1.5, 2.5], np.float32))
        self.assertEqual((x + 1).dtype, "float32")
        np.testing.assert_allclose(np.asarray((x - 1.0) / 4.0), [0.125, 0.375])
        np.testing.assert_allclose(np.asarray(2 * x), [3.0, 5.0])

    def test_unconvertible_values_name_their_type(self):
        with self.assertRaisesRegex(ValueError, "expected str or bytes elements in an object array, got object"):
            ops.convert_to_tensor(object())
        with self.assertRaisesRegex(ValueError, "unknown dtype 'float64'"):
            ops.cast([1.0], "float64")

    def test_tensor_is_exported_at_the_top(self):
        self.assertIs(chorus.Tensor, type(ops.convert_to_tensor([1])))


class OpsTest(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(7)

    def test_reductions_and_softmax_agree_with_numpy(self):
        x = self.rng.standard_normal((4, 5)).astype(np.float32)
        np.testing.assert_allclose(np.asarray(ops.sum(x, axis=1, keepdims=True)), x.sum(1, keepdims=True), atol=1e-6)
        np.testing.assert_allclose(np.asarray(ops.mean(x, axis=(0, 1))), x.mean(), rtol=1e-6)
        e = np.exp(x - x.max(-1, keepdims=True))
        np.testing.assert_allclose(np.asarray(ops.softmax(x)), e / e.sum(-1, keepdims=True), rtol=1e-5)
        np.testing.assert_array_equal(np.asarray(ops.argmax(x, axis=-1)), x.argmax(-1))

    def test_matmul_and_shape_ops_agree_with_numpy(self):
        a = self.rng.standard_normal((3, 4)).astype(np.float32)
        b = self.rng.standard_normal((4, 2)).astype(np.float32)
        np.testing.assert_allclose(np.asarray(ops.matmul(a, b)), a @ b, rtol=1e-5)
        np.testing.assert_allclose(np.asarray(ops.convert_to_tensor(a) @ b), a @ b, rtol=1e-5)
        self.assertEqual(ops.shape(ops.expand_dims(a, -1)), (3, 4, 1))
        np.testing.assert_array_equal(np.asarray(ops.transpose(a)), a.T)
        np.testing.assert_array_equal(np.asarray(ops.reshape(a, (2, 6))), a.reshape(2, 6))
        np.testing.assert_array_equal(np.asarray(ops.concatenate([a, a], axis=0)), np.concatenate([a, a]))

    def test_top_k_orders_ties_by_index(self):
        values, indices = ops.top_k(np.array([[1.0, 3.0, 3.0, 2.0]], np.float32), k=3)
        np.testing.assert_array_equal(np.asarray(values), [[3.0, 3.0, 2.0]])
        np.testing.assert_array_equal(np.asarray(indices), [[1, 2, 3]])

    def test_shape_errors_are_value_errors(self):
        with self.assertRaises(ValueError):
            ops.matmul(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))


if __name__ == "__main__":
    unittest.main()
