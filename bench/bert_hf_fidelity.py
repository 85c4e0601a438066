#!/usr/bin/python3
"""Same weights, same outputs: the PyTorch peer's BERT-tiny masked LM
(../shared/peers/bert_mlm.py, dropout off) exported in the Hugging Face BERT naming
that chorus's BertMaskedLM.from_preset maps, then a WikiText-2 validation batch run
through both. Writes DIR/{config.json, vocab.txt, model.safetensors} (the preset),
DIR/batch.safetensors (the masked batch) and DIR/expected.safetensors (the peer's
logits for the masked positions, in row order, and its loss); bert_mlm_bench
--case fidelity DIR compares. The peer has no segment embeddings: they are exported
as zeros (chorus adds segment 0's row). Usage: bert_hf_fidelity.py DATA_ROOT DIR"""
import json, os, struct, sys

import numpy as np
import torch

sys.path.insert(0, os.environ.get("PEERS_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "peers")))
import bert_mlm as peer  # noqa: E402


def save_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        array = np.ascontiguousarray(array)
        dtype = {np.float32: "F32", np.int32: "I32"}[array.dtype.type]
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
        blobs.append(array.tobytes())
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def hugging_face_weights(model, H):
    w = {}
    f = lambda t: t.detach().numpy().astype(np.float32)
    w["bert.embeddings.word_embeddings.weight"] = f(model.tok.weight)
    w["bert.embeddings.position_embeddings.weight"] = f(model.pos.weight)
    w["bert.embeddings.token_type_embeddings.weight"] = np.zeros((2, H), np.float32)
    w["bert.embeddings.LayerNorm.weight"], w["bert.embeddings.LayerNorm.bias"] = f(model.ln.weight), f(model.ln.bias)
    for i, layer in enumerate(model.layers):
        p = f"bert.encoder.layer.{i}."
        for j, part in enumerate(["query", "key", "value"]):  # qkv's outputs are q, k, v in turn
            w[p + f"attention.self.{part}.weight"] = f(layer.qkv.weight[j * H:(j + 1) * H])
            w[p + f"attention.self.{part}.bias"] = f(layer.qkv.bias[j * H:(j + 1) * H])
        for name, module in [("attention.output.dense", layer.out), ("attention.output.LayerNorm", layer.ln1),
                             ("intermediate.dense", layer.ff1), ("output.dense", layer.ff2),
                             ("output.LayerNorm", layer.ln2)]:
            w[p + name + ".weight"], w[p + name + ".bias"] = f(module.weight), f(module.bias)
    w["bert.pooler.dense.weight"], w["bert.pooler.dense.bias"] = np.zeros((H, H), np.float32), np.zeros(H, np.float32)
    w["cls.predictions.transform.dense.weight"] = f(model.head_dense.weight)
    w["cls.predictions.transform.dense.bias"] = f(model.head_dense.bias)
    w["cls.predictions.transform.LayerNorm.weight"] = f(model.head_ln.weight)
    w["cls.predictions.transform.LayerNorm.bias"] = f(model.head_ln.bias)
    w["cls.predictions.bias"] = f(model.head_bias)
    return w


def main():
    root, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    d = os.path.join(root, "wikitext-2") if os.path.isdir(os.path.join(root, "wikitext-2")) else root
    vocab = peer.build_vocab(os.path.join(d, "wiki.train.tokens"))
    V, L, B, H = len(vocab), 128, 64, 128
    ids = peer.encode(peer.read_lines(os.path.join(d, "wiki.valid.tokens"))[:B], vocab, L)
    model = peer.BertMLM(V, L=L, p=0.0).eval()
    with torch.no_grad():  # a few training-like updates so no weight is at its initial value
        for prm in model.parameters():
            prm.add_(0.01 * torch.randn_like(prm))
    config = {"model_type": "bert", "vocab_size": V, "hidden_size": H, "num_hidden_layers": 2,
              "num_attention_heads": 2, "intermediate_size": 512, "hidden_dropout_prob": 0.0,
              "max_position_embeddings": L, "type_vocab_size": 2, "hidden_act": "gelu_pytorch_tanh"}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": False}, f)
    with open(os.path.join(out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(w + "\n" for w in sorted(vocab, key=vocab.get)))
    save_safetensors(os.path.join(out, "model.safetensors"), hugging_face_weights(model, H))

    inp, pos, lab = peer.mask_batch(ids, torch.Generator().manual_seed(1234), V)
    with torch.no_grad():
        logits = model(inp, pos)
        loss = torch.nn.functional.cross_entropy(logits, lab)
    rows, cols = (pos // L).numpy(), (pos % L).numpy()
    M = int(np.bincount(rows, minlength=B).max())
    positions, labels, weights = (np.zeros((B, M), np.int32) for _ in range(3))
    weights = weights.astype(np.float32)
    fill = np.zeros(B, np.int64)
    for r, c, y in zip(rows, cols, lab.numpy()):
        positions[r, fill[r]], labels[r, fill[r]], weights[r, fill[r]] = c, y, 1
        fill[r] += 1
    save_safetensors(os.path.join(out, "batch.safetensors"), {
        "token_ids": inp.numpy().astype(np.int32), "padding_mask": (ids != peer.PAD).numpy().astype(np.int32),
        "mask_positions": positions, "mask_ids": labels, "mask_weights": weights})
    save_safetensors(os.path.join(out, "expected.safetensors"),
                     {"logits": logits.numpy(), "loss": np.array([float(loss)], np.float32)})
    print(json.dumps({"vocab": V, "masked": int(pos.numel()), "peer_loss": float(loss)}))


if __name__ == "__main__":
    main()
