#!/bin/bash
# go-ggml: the device run of a CUDA kit (build/cudakit.sh pack .cudarun/kit
# ./backend ./sched ./gguf ./ggml ./model ./cmd/llama):
# builds ggml-cuda there, links the kit, runs the GPU tests and a 1b model,
# all inside about 500 s (the device tool's run, carrying .cudarun/kit.tar.xz).
set -u
start=$(date +%s)
el() { echo "[$(( $(date +%s) - start ))s] $*"; }
exec > >(tee -a "$OUT/log") 2>&1
el begin; nvidia-smi -L; nproc; command -v nvcc g++ cmake go; nvcc --version | tail -2; g++ --version | head -1; cmake --version | head -1
mkdir -p /tmp/k && tar -C /tmp/k -xJf .cudarun/kit.tar.xz
K=/tmp/k/kit; B=$K/bin
el "building ggml-cuda (sm_90) and linking"
if ! GOGGML_CACHE=/tmp/gc timeout 470 bash build/cudakit.sh link $K; then
  el "build/link failed"; tail -60 /tmp/gc/cuda-*/build.log; cp /tmp/gc/cuda-*/build.log $OUT/ 2>/dev/null; exit 1
fi
el "built"; ls -la $B
cud=$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)
export LD_LIBRARY_PATH=$cud/lib64:$cud/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
left=$(( 470 - ($(date +%s) - start) ))
el "left: $left s"
T=$(( left > 200 ? 140 : left / 2 ))
(cd /tmp && for t in q4_0 q8_0 f16; do $B/cmd-llama -gen /tmp/m-$t.gguf -size 1b -type $t 2>&1 | tail -1; done) > $OUT/gen.log 2>&1 &
gen=$!
pids=()
(cd model && timeout $T $B/model.test -test.run GPU -test.v -test.count=1) > $OUT/llama-test.log 2>&1 &
pids+=($!)
(cd sched && timeout $T $B/sched.test -test.v -test.count=1) > $OUT/sched.log 2>&1 &
pids+=($!)
(cd backend && timeout $T $B/backend.test -test.v -test.count=1 -test.skip 'TestLoad') > $OUT/backend.log 2>&1 &
pids+=($!)
(cd gguf && timeout $T $B/gguf.test -test.v -test.count=1) > $OUT/gguf.log 2>&1 &
pids+=($!)
(cd ggml && GOGGML_TEST_GRAD_GPU=1 timeout $T $B/ggml.test -test.v -test.count=1 -test.run 'TestGradients|TestBackward') > $OUT/ggml.log 2>&1 &
pids+=($!)
wait $gen; el "models written"; cat $OUT/gen.log
# wait with no operand would also wait for the tee of exec > >(...)
wait "${pids[@]}"; el "tests done"
for f in llama-test sched backend gguf ggml; do echo "== $f: $(grep -c -- '^--- FAIL' $OUT/$f.log) FAIL, $(grep -c -- '--- PASS' $OUT/$f.log) PASS, $(grep -c -- '--- SKIP' $OUT/$f.log) SKIP; last: $(tail -1 $OUT/$f.log)"; grep -- '--- FAIL' $OUT/$f.log | head -5; done
ids=$(seq 1000 1511 | paste -sd,)
for r in 1 2; do for t in q4_0 q8_0 f16; do
  [ $(( $(date +%s) - start )) -lt 500 ] || break 2
  echo "== $t run $r"; timeout 40 $B/cmd-llama -model /tmp/m-$t.gguf -prompt-ids $ids -n 128 -ignore-eos -ctx 1024 -threads 8 2>&1 >/dev/null | tail -4
done; done
el end
