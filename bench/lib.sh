# Shared by the proxy benchmarks (bash; sourced).

# bench_isolate WORK: agentmux's XDG dirs under WORK, and a config with a secret bound
# to another host, so that every request is checked for its placeholder as a jail's is.
bench_isolate() {
	export XDG_CONFIG_HOME=$1/config XDG_DATA_HOME=$1/data XDG_RUNTIME_DIR=$1/run
	mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"
	chmod 700 "$XDG_RUNTIME_DIR"
	cat >"$XDG_CONFIG_HOME/agentmux/config" <<EOF
[secret bench]
env = BENCH_KEY
from_env = AMX_BENCH_KEY
host = api.example.com

[agent bench]
command = true
secret = bench
EOF
	export AMX_BENCH_KEY=sk-bench-Real0Value1For2The3Benchmark4
}
