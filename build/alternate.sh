# Sourced by the bench targets that compare builds (make bench-level,
# build/outside.sh): alternate runs the compute figures of several test
# binaries one figure at a time, the sides of a figure back to back in an
# order that rotates with each run, so that the samples bench/table pairs
# were measured one right after the other.
#
#   alternate COUNT BENCHTIME DIR SIDE=BINARY[=VAR=VALUE] ...
#
# DIR is the bench package's directory (the tests run there). Each line
# printed names its side in place of "go", for bench/table -sides.

# The compute figures of BenchmarkCompute (bench/bench_test.go).
compute_figures="mul_mat-f32-2048 mul_mat-f16-2048 mul_mat-q8_0-2048 mul_mat-q4_0-2048
mul_vec-f32-4096 mul_vec-f16-4096 mul_vec-q8_0-4096 mul_vec-q4_0-4096"

alternate() {
  local count=$1 benchtime=$2 dir=$3
  shift 3
  local sides=("$@") n=$#
  local i j fig spec name rest bin env
  for i in $(seq "$count"); do
    for fig in $compute_figures; do
      for j in $(seq 0 $((n - 1))); do
        spec=${sides[$(((i + j) % n))]}
        name=${spec%%=*} rest=${spec#*=}
        bin=${rest%%=*} env=
        [ "$bin" = "$rest" ] || env=${rest#*=}
        (cd "$dir" && env $env "$bin" -test.run '^$' -test.bench "Compute\$/^$fig\$/^go\$" -test.benchtime "$benchtime") |
          sed -E "s|/go(-[0-9]+)? |/$name |"
      done
    done
  done
}
