// Package sample picks the next token from a model's logits the way
// llama.cpp's default sampler chain (common_sampler) does. It is pure Go:
// it calls no C and needs no cgo.
//
//	s, err := sample.New(sample.Defaults())
//	for _, id := range prompt {
//		s.Accept(id) // the penalties look at the prompt too
//	}
//	id, err := s.Sample(logits) // logits of the last position
//	s.Accept(id)
//
// # The chain
//
// Sample applies, in llama.cpp's order (common_params_sampling.samplers):
//
//  1. penalties: each token among the last PenaltyLastN accepted ones has
//     its logit l made l/RepeatPenalty when l > 0, else l·RepeatPenalty,
//     and then lowered by count·FrequencyPenalty + PresencePenalty, where
//     count is how often it occurs among them (llama_sampler_penalties);
//  2. DRY: not implemented (llama.cpp's default, dry_multiplier 0, is off);
//  3. top-k: the TopK largest logits stay (llama_sampler_top_k);
//  4. typical-p: not implemented (llama.cpp's default, typ_p 1, is off);
//  5. top-p: the probabilities are the softmax of the logits at
//     temperature 1 (not yet divided by Temperature); the most likely
//     tokens stay, the fewest whose probabilities add up to at least TopP
//     (llama_sampler_top_p, min_keep 0: at least one stays);
//  6. min-p: the tokens whose probability is at least MinP times the
//     largest one stay, that is those whose logit is at least the largest
//     plus log(MinP) (llama_sampler_min_p);
//  7. XTC: not implemented (llama.cpp's default, xtc_probability 0, is off);
//  8. temperature: the logits are divided by Temperature
//     (llama_sampler_temp_ext with dynatemp_range 0);
//  9. dist: a random draw from the softmax of what is left, from a
//     generator seeded with Seed (llama_sampler_dist).
//
// Temperature 0 is greedy: Sample returns the token with the largest
// logit after the penalties (the other stages cannot remove it), as
// llama.cpp's temperature stage does for temp <= 0. The zero Params is
// greedy with every other stage off; Defaults is llama.cpp's default
// chain. The stages compute in float64, so penalties and small
// temperatures cannot overflow float32, and the draw cannot match
// llama.cpp's std::mt19937 token for token: the candidates and their
// probabilities do (reference_test.go compares them with llama.cpp's).
//
// # Logits that are not finite
//
// A NaN logit counts as -Inf: its token is never picked. A -Inf logit has
// probability 0: its token is never picked either. Logits that are all
// NaN or -Inf leave nothing to pick: Sample returns an ErrLogits error, as
// it does for no logits or more than math.MaxInt32 of them.
//
// +Inf logits are treated as the limit of logits that grow without bound
// together: when there are any, the tokens with +Inf share the
// probability equally and every other token has probability 0. Greedy
// returns the first of them (the lowest index: ties among equal largest
// logits always go to the lowest index), top-k keeps the k lowest indexes
// among them, and top-p and min-p see equal probabilities. The penalties
// cannot make +Inf finite (l/RepeatPenalty and l - count·FrequencyPenalty
// - PresencePenalty stay +Inf), nor make a finite logit infinite.
package sample
