"""The model at the level of the paper's equations (Bahdanau et al., 2015, appendices A and B):
each computed quantity against a naive computation from the module's own weights."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor, nn

from nmtkit.data.batching import collate, collate_source
from nmtkit.data.text import BOS_ID, EOS_ID, PAD_ID
from nmtkit.models import Seq2Seq
from nmtkit.models.attention.additive import AdditiveAttention
from nmtkit.registry import DecoderState, EncoderOutput
from nmtkit.search import BeamSearch, GreedySearch, SamplingSearch
from tests.unit.test_models import TINY_CGRU, TINY_DECODERS, VOCAB, random_ids, tiny_model

LENGTHS = [3, 7, 5]  # a padded batch: the first and last sentences carry padding


def encode(model: Seq2Seq, src: list[list[int]]) -> EncoderOutput:
    batch = collate(src, [[4]] * len(src), list(range(len(src))))
    return model.encode(batch.src, batch.src_lengths)


def assert_orthogonal(matrix: Tensor) -> None:
    eye = torch.eye(matrix.size(0))
    torch.testing.assert_close(matrix @ matrix.T, eye, atol=1e-5, rtol=0)


# ----------------------------------------------------------------- alignment model (A.1.2)


def test_additive_energy_is_v_tanh_of_w_s_plus_u_h_and_padding_gets_no_weight() -> None:
    torch.manual_seed(0)
    scorer = AdditiveAttention(AdditiveAttention.Config(hidden_size=16), query_size=12, key_size=10)
    lengths = torch.tensor([5, 3])
    annotations = torch.randn(2, 5, 10)  # h_j [B, S, C]
    pad_mask = torch.arange(5)[None] >= lengths[:, None]  # [B, S]
    query = torch.randn(2, 12)  # s_{i-1} [B, D]
    keys = scorer.project_keys(annotations, pad_mask)
    state = DecoderState.start(query, annotations, keys, pad_mask)

    w_a, u_a, v_a = scorer.query_proj.weight, scorer.key_proj.weight, scorer.v.weight
    b_a = scorer.key_proj.bias
    naive = torch.tanh((query @ w_a.T)[:, None] + annotations @ u_a.T + b_a) @ v_a[0]  # [B, S]
    torch.testing.assert_close(scorer.energies(query, state), naive, atol=1e-5, rtol=0)

    attended = scorer(query, state)
    weights = naive.masked_fill(pad_mask, float("-inf")).softmax(dim=-1)  # alpha_ij (eq. 6)
    torch.testing.assert_close(attended.weights, weights, atol=1e-6, rtol=0)
    assert bool((attended.weights[pad_mask] == 0).all())
    context = (weights[..., None] * annotations).sum(dim=1)  # c_i (eq. 5)
    torch.testing.assert_close(attended.context, context, atol=1e-6, rtol=0)


# ------------------------------------------------------------------------ decoder (A.2.2)


def any_step(model: Seq2Seq) -> tuple[DecoderState, Tensor, int, int]:
    """A state s_{i-1} (random) for a padded batch, the previous words y_{i-1}, and the widths
    of E y and of c_i."""
    encoder_out = encode(model, random_ids(LENGTHS))
    state = model.init_state(encoder_out)
    state = state.advance(torch.randn_like(state.hidden), state.prev_weights)  # any s_{i-1}
    prev = torch.tensor([5, 9, 4])  # y_{i-1}
    return state, prev, model.decoder.embed.embedding_dim, encoder_out.annotations.size(-1)


def test_decoder_gru_step_equals_torch_gru_cell_with_the_same_weights() -> None:
    """s_i = GRU(s_{i-1}, [E y_{i-1}; c_i]) with torch's gate order r, z, n."""
    model = tiny_model("model.init_scale=0.5")
    decoder = model.decoder
    state, prev, embed_size, context_size = any_step(model)
    cell = nn.GRUCell(embed_size + context_size, decoder.hidden_size)
    with torch.no_grad():
        cell.weight_ih.copy_(
            torch.cat([decoder.input_from_embed.weight, decoder.input_from_context.weight], dim=1)
        )
        cell.bias_ih.copy_(decoder.input_from_embed.bias)
        cell.weight_hh.copy_(decoder.hidden_to_gates.weight)
        cell.bias_hh.copy_(decoder.hidden_to_gates.bias)
        context = decoder.attention(state.hidden, state).context  # c_i, attended from s_{i-1}
        expected = cell(torch.cat([decoder.embed(prev), context], dim=-1), state.hidden)
        found = model.decode_step(prev, state).state.hidden
    torch.testing.assert_close(found, expected, atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    ("decoder", "readout_state"), [("gru", "current"), ("gru", "previous"), ("cgru", "current")]
)
def test_teacher_forcing_gives_the_log_probs_of_step_by_step_decoding(
    decoder: str, readout_state: str
) -> None:
    model = tiny_model(
        "model.init_scale=0.5",
        *TINY_DECODERS[decoder],
        f"model.decoder.readout_state={readout_state}",
    )
    src, tgt = random_ids([4, 6]), random_ids([5, 3], seed=1)
    batch = collate(src, tgt, [0, 1])
    with torch.no_grad():
        forced = model(batch)[0].log_softmax(dim=-1)  # [N, V], real positions in row order
        state = model.init_state(model.encode(batch.src, batch.src_lengths))
        steps = []
        for prev in batch.tgt_in.unbind(dim=1):
            out = model.decode_step(prev, state)
            steps.append(out.log_probs)
            state = out.state
    stepped = torch.stack(steps, dim=1)[batch.tgt_out != PAD_ID]  # [N, V]
    torch.testing.assert_close(forced, stepped, atol=1e-5, rtol=0)


def test_conditional_gru_step_is_two_torch_gru_cells_around_the_attention() -> None:
    """cgru (Nematus): s'_i = GRU_1(s_{i-1}, E y_{i-1}); c_i attended from s'_i;
    s_i = GRU_2(s'_i, c_i), each with torch's gate order r, z, n."""
    model = tiny_model("model.init_scale=0.5", *TINY_CGRU)
    decoder = model.decoder
    state, prev, embed_size, context_size = any_step(model)
    first = nn.GRUCell(embed_size, decoder.hidden_size)
    second = nn.GRUCell(context_size, decoder.hidden_size)
    with torch.no_grad():
        first.weight_ih.copy_(decoder.input_from_embed.weight)
        first.bias_ih.copy_(decoder.input_from_embed.bias)
        first.weight_hh.copy_(decoder.hidden_to_gates.weight)
        first.bias_hh.copy_(decoder.hidden_to_gates.bias)
        second.weight_ih.copy_(decoder.input_from_context.weight)
        second.bias_ih.zero_()
        second.weight_hh.copy_(decoder.proposal_to_gates.weight)
        second.bias_hh.copy_(decoder.proposal_to_gates.bias)
        proposal = first(decoder.embed(prev), state.hidden)  # s'_i
        attended = decoder.attention(proposal, state)  # from s'_i
        expected = second(attended.context, proposal)
        found = model.decode_step(prev, state)
    torch.testing.assert_close(found.state.hidden, expected, atol=1e-6, rtol=0)
    torch.testing.assert_close(found.weights, attended.weights, atol=1e-6, rtol=0)


def test_conditional_gru_attends_after_reading_the_previous_word() -> None:
    """Unlike RNNsearch's decoder (test_models.py), cgru's attention at step i reads y_{i-1}."""
    model = tiny_model("model.init_scale=1.0", *TINY_CGRU)
    src, tgt = random_ids([6]), random_ids([5], seed=1)
    i = 3
    changed = [list(tgt[0])]
    changed[0][i - 1] = (changed[0][i - 1] - 4 + 1) % (VOCAB - 4) + 4
    w = model.force_decode(collate(src, tgt, [0]))[0]  # [T, S]
    w_changed = model.force_decode(collate(src, changed, [0]))[0]
    assert torch.equal(w[:i], w_changed[:i])  # the steps before the one reading the change
    assert not torch.allclose(w[i], w_changed[i], atol=1e-6)  # the step reading it attends anew


@pytest.mark.parametrize(("readout_state", "moves"), [("previous", False), ("current", True)])
def test_the_previous_readout_reads_s_i_minus_1_not_s_i(readout_state: str, moves: bool) -> None:
    """t_i = maxout(U_o s_{i-1} + V_o E y_{i-1} + C_o c_i) (A.2.2): changing how s_i is made
    leaves step i's distribution alone; with ``current`` (eq. 4, s_i) it moves it."""
    model = tiny_model("model.init_scale=0.5", f"model.decoder.readout_state={readout_state}")
    state = model.init_state(encode(model, random_ids(LENGTHS)))
    prev = torch.tensor([5, 9, 4])
    with torch.no_grad():
        before = model.decode_step(prev, state)
        model.decoder.hidden_to_gates.bias.add_(1.0)  # changes s_i, not s_{i-1} or c_i
        after = model.decode_step(prev, state)
    assert not torch.allclose(before.state.hidden, after.state.hidden)
    assert torch.equal(before.log_probs, after.log_probs) is not moves


# ------------------------------------------------------------------------ encoder (A.2.1)


def real_embedded(model: Seq2Seq, ids: list[int]) -> Tensor:
    """The embedded source words of one sentence with its EOS, no padding: [1, S, E]."""
    return model.src_embed(torch.tensor([[*ids, EOS_ID]]))


def test_birnn_summary_is_the_backward_state_at_the_first_word() -> None:
    """s_0 is made from <-h_1: the backward RNN's state after reading the sentence right to left."""
    model = tiny_model("model.init_scale=0.5")
    src = random_ids(LENGTHS)
    out = encode(model, src)
    rnn = model.encoder.rnn
    backward = nn.GRU(rnn.input_size, rnn.hidden_size, batch_first=True)
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(backward, f"{name}_l0").copy_(getattr(rnn, f"{name}_l0_reverse"))
        for b, ids in enumerate(src):
            _, last = backward(real_embedded(model, ids).flip(1))  # read right to left
            torch.testing.assert_close(out.summary[b], last[0, 0], atol=1e-5, rtol=0)
            h = rnn.hidden_size
            torch.testing.assert_close(out.annotations[b, 0, h:], last[0, 0], atol=1e-5, rtol=0)


def test_rnn_summary_is_the_last_real_forward_state() -> None:
    model = tiny_model("model.init_scale=0.5", "model.encoder=rnn")
    src = random_ids(LENGTHS)
    out = encode(model, src)
    with torch.no_grad():
        for b, ids in enumerate(src):
            _, last = model.encoder.rnn(real_embedded(model, ids))
            length = len(ids) + 1  # EOS
            torch.testing.assert_close(out.summary[b], last[0, 0], atol=1e-5, rtol=0)
            torch.testing.assert_close(out.annotations[b, length - 1], out.summary[b])


# -------------------------------------------------------------------- initialization (B.1)


def test_the_paper_initialization() -> None:
    """Orthogonal recurrent matrices per gate; W_a, U_a ~ N(0, 0.001^2); v_a and every bias 0;
    every other matrix ~ N(0, 0.01^2)."""
    model = tiny_model("model.init=paper", "model.init_scale=0.5")
    encoder, decoder = model.encoder.rnn, model.decoder
    for weight in (encoder.weight_hh_l0, encoder.weight_hh_l0_reverse):
        for block in weight.detach().split(encoder.hidden_size):  # U_r, U_z, U
            assert_orthogonal(block)
    for block in decoder.hidden_to_gates.weight.detach().split(decoder.hidden_size):
        assert_orthogonal(block)
    attention = decoder.attention
    for matrix in (attention.query_proj.weight, attention.key_proj.weight):  # W_a, U_a
        assert matrix.std().item() == pytest.approx(0.001, rel=0.1)
    assert bool((attention.v.weight == 0).all())
    for name, param in model.named_parameters():
        if param.dim() == 1:
            assert bool((param == 0).all()), name
    for matrix in (model.src_embed.weight, decoder.embed.weight, decoder.readout_hidden.weight):
        assert matrix.std().item() == pytest.approx(0.01, rel=0.1)
    assert decoder.output.weight.std().item() == pytest.approx(0.01, rel=0.1)


def test_the_uniform_initialization_stays_within_init_scale() -> None:
    model = tiny_model("model.init_scale=0.05")
    for param in model.parameters():
        assert param.abs().max().item() <= 0.05
    assert model.decoder.attention.v.weight.abs().max().item() > 0


# ---------------------------------------------------------------- precision under autocast


@pytest.mark.parametrize("readout_state", ["current", "previous"])
def test_states_stay_fp32_under_bf16_autocast(readout_state: str) -> None:
    model = tiny_model(f"model.decoder.readout_state={readout_state}")
    src = random_ids(LENGTHS)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        encoder_out = encode(model, src)
        state = model.init_state(encoder_out)  # s_0
        out = model.decode_step(torch.tensor([BOS_ID] * len(src)), state)
    assert encoder_out.annotations.dtype == torch.float32  # h_j: see _RecurrentEncoder
    assert state.hidden.dtype == torch.float32
    assert out.state.hidden.dtype == torch.float32  # s_i
    assert bool(torch.isfinite(out.log_probs).all())
    total = out.log_probs.float().exp().sum(dim=-1)
    torch.testing.assert_close(total, torch.ones_like(total), atol=1e-2, rtol=0)


# -------------------------------------------------------------------- what a score means


def search(strategy, model: Seq2Seq, src_ids: list[list[int]]):
    src, lengths = collate_source(src_ids)
    return strategy.search(
        model,
        src,
        lengths,
        max_lengths=torch.full((len(src_ids),), 8),
        pad_id=PAD_ID,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
    )


def test_each_strategy_scores_as_the_search_package_says() -> None:
    """greedy and sampling: log p / |y| (EOS counted); beam with alpha = beta = 0: raw log p."""
    model = tiny_model("model.init_scale=0.5")
    src = random_ids([5, 8], seed=3)
    for strategy in (
        GreedySearch(GreedySearch.Config()),
        SamplingSearch(SamplingSearch.Config(num_samples=3)),
    ):
        for hyps in search(strategy, model, src):
            for h in hyps:
                assert h.score == pytest.approx(h.log_prob / (len(h.tokens) + 1), abs=1e-6)
    raw = BeamSearch(BeamSearch.Config(beam_size=4, length_penalty=0.0))
    for hyps in search(raw, model, src):
        assert all(h.score == h.log_prob for h in hyps)  # exactly, no normalization
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
