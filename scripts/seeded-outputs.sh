#!/usr/bin/env bash
# Seeded outputs of the guides' commands (README.md, docs/), to show that a change keeps behaviour
# (issue 34: "seeded runs give identical JSON").
#
#   scripts/seeded-outputs.sh [REPO [OUT]]   build dprl from the checkout REPO (default:
#                                            this repository) and write every command's
#                                            normalised output to OUT (default: a new
#                                            temporary directory), printed at the end
#   scripts/seeded-outputs.sh diff A B       run it on git revisions A and B (each in a
#                                            temporary `git worktree`, removed afterwards)
#                                            and print the differences; exit 1 if any
#                                            (SEEDED_OUTPUTS_KEEP=1 keeps both outputs)
#
# The commands are the guides', each with --seed and shrunk (fewer users, steps,
# episodes, experts) so that a run takes 1-2 minutes on 2 cores (build included) while every command
# keeps its code path. Each writes its stdout to OUT/<name>.json (or .txt), its
# stderr to OUT/<name>.err and its exit status to OUT/exit-codes.txt; the files every
# run writes (logs, snapshots, plots, the report) are listed with their SHA-256 in
# OUT/files.sha256. A command whose flags an older revision does not have is skipped
# for that revision, and the skip is written in place of its output.
#
# Only what is run-dependent by construction is normalised (see normalise_* below):
# wall-clock timings and timestamps, the embedded NATS server's port, the run's
# temporary directory, progress lines (emitted on a wall-clock timer), the ledger
# entries' hashes (which cover the entry's wall-clock time), and the fields of the demo
# that the guides document as not bit-for-bit repeatable. Everything else (epsilons,
# returns, weights, dataset ids, record digests, policy bytes) is compared as is.
#
# Not run: dprl agent and dprl replay as long-running services (the demo runs the
# same agent and users in one process); dprl train --algo dpsgd-dqn (72 s, no flag
# shortens it); dprl audit with the default 10,000 runs (the --runs flag keeps the path).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)

die() { echo "seeded-outputs: $*" >&2; exit 2; }
command -v jq >/dev/null || die "needs jq (apt-get install -y jq)"

# ---------------------------------------------------------------------------
# diff A B
# ---------------------------------------------------------------------------
if [ "${1:-}" = diff ]; then
	[ $# -eq 3 ] || die "usage: $0 diff REV_A REV_B"
	TMP=$(mktemp -d)
	wts=()
	cleanup() {
		for w in "${wts[@]}"; do git -C "$ROOT" worktree remove --force "$w" >/dev/null 2>&1 || true; done
		if [ -n "${SEEDED_OUTPUTS_KEEP:-}" ]; then
			rm -rf "$TMP/wt1" "$TMP/wt2"
			echo "outputs kept in $TMP/out1 ($2) and $TMP/out2 ($3)" >&2
		else
			rm -rf "$TMP"
		fi
	}
	trap cleanup EXIT
	i=0
	for rev in "$2" "$3"; do
		i=$((i + 1))
		git -C "$ROOT" rev-parse --verify --quiet "$rev^{commit}" >/dev/null || die "$rev: not a commit"
		wt="$TMP/wt$i"
		git -C "$ROOT" worktree add --detach --quiet "$wt" "$rev"
		wts+=("$wt")
		echo "== $rev ($(git -C "$ROOT" rev-parse --short "$rev")): $TMP/out$i" >&2
		"$ROOT/scripts/seeded-outputs.sh" "$wt" "$TMP/out$i" >&2
	done
	# out1 is A's, out2 is B's.
	if (cd "$TMP" && diff -r -u out1 out2); then
		echo "seeded outputs identical: $2 and $3" >&2
		exit 0
	fi
	exit 1
fi

# ---------------------------------------------------------------------------
# one run
# ---------------------------------------------------------------------------
REPO=$(cd "${1:-$ROOT}" && pwd)
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
START=$SECONDS

(cd "$REPO" && go build -o "$WORK/dprl" ./cmd/dprl)
D="$WORK/dprl"
mkdir -p "$WORK/run" "$WORK/home"
cd "$WORK/run"
# The default offline ledger lives under $HOME: keep it inside the run.
export HOME="$WORK/home" XDG_DATA_HOME="$WORK/home/.local/share" TZ=UTC
: >"$OUT/exit-codes.txt"

# normalise_json FILE: drops the fields that are wall-clock measurements by name, at
# any depth. Each is a timing the output itself labels operational (primorl's
# "timing"), or a duration or rate of this machine:
#   seconds, seconds_per_expert, model_seconds, sac_seconds, steps_per_second,
#   updates_per_second, acts_per_second, act_p50_ms, act_p99_ms;
#   nats_url: the embedded server's port, picked free by the OS.
# Ledger outputs also drop each entry's "time" (the wall clock when it was written).
normalise_json() {
	local f=$1 ledger=${2:-}
	local del='["seconds","seconds_per_expert","model_seconds","sac_seconds","steps_per_second","updates_per_second","acts_per_second","act_p50_ms","act_p99_ms","nats_url"]'
	local prog='walk(if type == "object" then with_entries(select(.key as $k | $del | index($k) | not)) else . end)'
	if [ -n "$ledger" ]; then
		prog="$prog | walk(if type == \"object\" and has(\"time\") and has(\"seq\") then .time = \"<time>\" else . end)"
	fi
	local compact=()
	case $f in *.jsonl) compact=(-c) ;; esac # JSON Lines (ledger export)
	# A file that is not JSON (a refusal, a skip) is left as it is.
	if jq "${compact[@]}" --argjson del "$del" "$prog" "$f" >"$f.n" 2>/dev/null; then
		mv "$f.n" "$f"
	else
		rm -f "$f.n"
	fi
}

# normalise_text FILE: the wall-clock parts of text outputs, each by its pattern:
#   "timing (...): model 0.1 s, policy 0.1 s" (primorl, labelled operational), offline
#   learn's "0.0 s (operational timing, ...)", train's "steps in 0.0s (N steps/s)",
#   the audit table's time column and its "N targets in T s";
#   the demo's "in 0.0 s", its act latency line and its users' own mean return (the
#   docs/agent.md: a seeded demo is not bit-for-bit repeatable, the agent serves sessions
#   concurrently), and the embedded server's port.
normalise_text() {
	sed -E -i \
		-e 's/^(timing \(.*\)): .*/\1: <timing>/' \
		-e 's/^([0-9]+ users, [0-9]+ updates? \(policy version [0-9]+\)) in [0-9.]+ s/\1 in <t> s/' \
		-e 's/^(act latency seen by clients over NATS:).*/\1 <latency>/' \
		-e 's/(simulated users. own mean return over their last [0-9]+ sessions) [-0-9.]+/\1 <sim-users-return>/' \
		-e 's#nats://127\.0\.0\.1:[0-9]+#nats://127.0.0.1:<port>#g' \
		-e 's/  [0-9]+\.[0-9]+ s$/  <t> s/' \
		-e 's/^([0-9]+ targets in) [0-9.]+ s/\1 <t> s/' \
		-e 's#steps in [0-9.]+s \([0-9.]+ steps/s\)#steps in <t>s (<rate> steps/s)#' \
		-e 's/[0-9.]+ s \(operational timing/<t> s (operational timing/' \
		"$1"
}

# normalise_err FILE: stderr. Log lines are JSON (zerolog, not a terminal): their "time"
# is the wall clock; progress lines (those with "elapsed_s") are emitted on a timer,
# so how many there are depends on the machine's speed: they are dropped.
normalise_err() {
	local f=$1 line
	: >"$f.n"
	while IFS= read -r line || [ -n "$line" ]; do
		if jq -e 'type == "object"' <<<"$line" >/dev/null 2>&1; then
			jq -c 'select(has("elapsed_s") | not) | del(.time)' <<<"$line" >>"$f.n"
		else
			printf '%s\n' "$line" >>"$f.n"
		fi
	done <"$f"
	mv "$f.n" "$f"
	normalise_text "$f"
}

# missing_flag ARGS...: prints the first --flag of ARGS that the (sub)command's help
# does not list (an older revision), or nothing.
missing_flag() {
	local path=() a
	for a in "$@"; do
		case $a in -*) break ;; *) path+=("$a") ;; esac
	done
	local help
	help=$("$D" "${path[@]}" --help 2>&1 || true)
	for a in "$@"; do
		case $a in
		--*)
			a=${a%%=*}
			# a flag's own line of the help, not a mention in another's text
			grep -q -E -- "^ +(-[[:alnum:]], )?$a( |\$)" <<<"$help" || { echo "$a"; return; }
			;;
		esac
	done
}

# run NAME EXT ARGS...: runs dprl ARGS in the work directory, stdout to NAME.EXT.
run() {
	local name=$1 ext=$2
	shift 2
	local miss
	miss=$(missing_flag "$@")
	if [ -n "$miss" ]; then
		echo "SKIPPED: this revision's dprl $* has no $miss" >"$OUT/$name.$ext"
		echo "$name skipped (no $miss)" >>"$OUT/exit-codes.txt"
		echo "  $name: skipped, this revision has no $miss" >&2
		return
	fi
	local rc=0
	"$D" "$@" --log-format json >"$OUT/$name.$ext" 2>"$OUT/$name.err" || rc=$?
	echo "$name $rc" >>"$OUT/exit-codes.txt"
	case $ext in
	json | jsonl) normalise_json "$OUT/$name.$ext" ;;
	*) normalise_text "$OUT/$name.$ext" ;;
	esac
	normalise_err "$OUT/$name.err"
	echo "  $name: exit $rc" >&2
}

# runledger NAME DIR: show, verify and export of the ledger in DIR.
runledger() {
	local name=$1 dir=$2
	run "$name-show" json ledger show --data "$dir" --json
	run "$name-verify" json ledger verify --data "$dir" --json
	run "$name-export" jsonl ledger export --data "$dir"
	for f in show verify export; do normalise_json "$OUT/$name-$f.$([ $f = export ] && echo jsonl || echo json)" ledger; done
	# Entry hashes: an entry's hash covers its wall-clock time, so it differs run to
	# run; every output naming one gets "<entry-hash DIR:SEQ>" instead (the chain
	# itself is checked by ledger verify, whose "ok" is compared).
	jq -r --arg d "$dir" 'select(.hash != null) | "\(.hash) \($d):\(.seq)"' "$OUT/$name-export.jsonl" >>"$WORK/hashes" 2>/dev/null || true
}

echo "seeded-outputs: $REPO ($(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')) -> $OUT" >&2

# --- help of every command (help defaults, flag lists) ----------------------
{
	"$D" --help
	for c in accountant "accountant epsilon" "accountant noise" "accountant svt" agent audit demo \
		ledger "ledger show" "ledger verify" "ledger export" "ledger head" "ledger set-cap" \
		offline "offline gtd2" "offline svt" "offline learn" "offline primorl" replay report sims \
		"sims list" "sims rollout" "sims generate" "sims experts" "sims baselines" "sims bandit" train; do
		echo "=== dprl $c --help"
		# shellcheck disable=SC2086
		"$D" $c --help 2>&1 || true
	done
} >"$OUT/help.txt"
sed -i "s#$WORK#<work>#g" "$OUT/help.txt"

# --- accountant (docs/accounting.md) --------------------------------
run acc-epsilon json accountant epsilon --z 1.0 --delta 1e-5 --json
run acc-epsilon-q json accountant epsilon --z 1.1 --delta 1e-5 --q 0.00427 --steps 14063 --json
run acc-noise txt accountant noise --epsilon 1 --delta 1e-5
run acc-svt txt accountant svt --epsilon 7.5 --delta 9e-4 --queries 50 --max-len 500 --pmin 0.02
run acc-pld txt accountant epsilon --z 1 --delta 1e-5 --q 0.01 --steps 1000 --method pld

# --- simulators (docs/simulators.md) ----------------------------
run sims-list txt sims list
run sims-rollout json sims rollout --env cartpole --seed 1 --actions 0,1,1,0 --json
run sims-rollout-pendulum json sims rollout --env pendulum --seed 1 --init-state '[3.1, 0]' --actions 2,-2 --json
run sims-baselines json sims baselines --env recsys --episodes 50 --seed 1000 --json
run sims-bandit json sims bandit --seed 101 --seeds 1 --users 2000 --held-out 500 --baseline-users 2000 --user-epsilon 1,5 --no-demo --json

# --- dprl train (docs/train.md) --------------------------------
run train-dppg json train --env cartpole --algo dppg --users 200 --seed 1 --seeds 2 --eval-episodes 3 --plot train-dppg.png --json
run train-dppg-diag json train --env cartpole --algo dppg --users 200 --seed 1 --noise independent --eval-episodes 3 --diag train-diag.jsonl --json
run train-dppg-text txt train --env cartpole --algo dppg --z 3 --users 100 --seed 7 --eval-episodes 3
run train-ppo json train --env cartpole --algo ppo --users 200 --seed 1 --eval-episodes 3 --json
run train-sweep json train --env cartpole --sweep-z 1,3 --users 100 --seed 1 --seeds 2 --eval-episodes 3 --json
run train-bandit json train --env bandit --algo dppg --epsilon 1 --users 2000 --seed 1 --eval-episodes 3 --json
run train-recsys json train --env recsys --users 200 --seed 1 --eval-episodes 2 --json
run train-loglinear json train --algo dppg-loglinear --env riverswim --epsilon 1 --region l2,kl --episodes 200 --seeds 2 --seed 1 --json
run train-reinforce json train --algo dpsgd-reinforce --env cartpole --seed 1 --eval-episodes 2 --json
run train-sac json train --algo sac --env pendulum --hidden 16,16 --steps 1500 --learning-starts 300 --seed 301 --seeds 2 --eval-episodes 2 --log-episodes pendulum.jsonl --log-replays 2 --json

# --- GPOPE and the dataset budget (docs/offline.md: GPOPE, The dataset budget) --------
run sims-generate json sims generate --env chain --behavior random --episodes 200 --seed 1 --out chain.jsonl --json
run gtd2-gpope json offline gtd2 --data chain.jsonl --env chain --target uniform --features tabular \
	--epsilon 1 --delta 1e-5 --seed 1 --clip 0.005 --step-size 4 --iters 300 --batch 50 --plot mspbe.png \
	--ledger chain-ledger --dataset-delta 1e-4 --json
cp -r chain-ledger chain-ledger-1 2>/dev/null || true # its first entry only (see ledger-older)
run gtd2-dplsw json offline gtd2 --data chain.jsonl --env chain --target uniform --features tabular \
	--method dp-lsw --epsilon 1 --delta 1e-5 --seed 1 --ledger chain-ledger --json
run gtd2-gpope-text txt offline gtd2 --data chain.jsonl --env chain --target uniform --features tabular \
	--epsilon 1 --delta 1e-5 --seed 2 --clip 0.005 --step-size 4 --iters 300 --batch 50 --ledger chain-ledger --non-private
run gtd2-lstd json offline gtd2 --data chain.jsonl --env chain --target uniform --features tabular --method lstd --non-private --json
# A run over the cap is refused (exit 1, nothing charged), a cap that differs from the
# stored one is refused (exit 2), then the owner raises the cap and the run goes through.
GPOPE=(--data chain.jsonl --env chain --target uniform --features tabular --clip 0.005 --step-size 4 --iters 300 --batch 50)
run gtd2-refused txt offline gtd2 "${GPOPE[@]}" --epsilon 9.95 --delta 1e-5 --seed 3 --ledger chain-ledger
run gtd2-cap-differs txt offline gtd2 "${GPOPE[@]}" --epsilon 1 --delta 1e-5 --seed 3 --ledger chain-ledger --dataset-epsilon 20
run ledger-set-cap txt ledger set-cap --data chain-ledger --file chain.jsonl --epsilon 15 --delta 1e-4 --reason "seeded-outputs"
run gtd2-after-cap json offline gtd2 "${GPOPE[@]}" --epsilon 9.95 --delta 1e-5 --seed 3 --ledger chain-ledger --json
run sims-generate-mc json sims generate --env mountaincar --behavior epsilon-greedy:0.1 --episodes 30 --seed 1 --out mc.jsonl --json
run gtd2-mountaincar json offline gtd2 --data mc.jsonl --env mountaincar --target epsilon-greedy:0.1 --features fourier:3 \
	--epsilon 1 --delta 1e-5 --seed 1 --iters 100 --batch 20 --ledger mc-ledger --dataset-delta 1e-4 --non-private --json
runledger chain chain-ledger

# --- SVT and expert-level learners (docs/offline.md: SVT, Expert-level learners) ------
run sims-experts json sims experts --env cartpole --m 1000 --trajectories 2 --bases 2 --users 200 \
	--finetune-users 20 --out-dir experts --log data.jsonl --seed 1 --json
run svt json offline svt --data data.jsonl --experts experts --epsilon 10 --delta 1e-3 --pmin 0.02 \
	--queries 10 --max-len 500 --out-stable stable-a.jsonl --out-unstable unstable-a.jsonl \
	--dataset-delta 1e-2 --ledger ledger-svt --seed 1 --json
run learn-nonprivate json offline learn --algo cql --env cartpole --data data.jsonl --non-private \
	--steps 200 --eval-every 100 --eval-episodes 3 --hidden 16,16 --seed 1 --json
run learn-dp json offline learn --algo cql --env cartpole --data data.jsonl --experts 1000 \
	--epsilon 10 --delta 3.33e-4 --hidden 16,16 --steps 300 --eval-every 100 --eval-episodes 3 \
	--ledger ledger-a --dataset-delta 3.34e-4 --seed 1 --out q.json --json
run learn-dp-text txt offline learn --algo cql --env cartpole --data data.jsonl --unit trajectory \
	--epsilon 5 --delta 1e-5 --hidden 16,16 --steps 200 --eval-every 0 --eval-episodes 3 \
	--ledger ledger-t --dataset-delta 1e-4 --seed 2
run svt-b json offline svt --data data.jsonl --experts experts --epsilon 7.5 --delta 3e-4 --queries 10 \
	--out-stable stable.jsonl --out-unstable unstable.jsonl --ledger ledger-b --dataset-delta 3.34e-4 \
	--dataset-epsilon 20 --seed 1 --json
run learn-selective json offline learn --algo bcq --env cartpole --stable stable.jsonl --unstable unstable.jsonl \
	--experts 1000 --p 0.8 --epsilon 2.5 --delta 3.33e-5 --hidden 16,16 --steps 300 --eval-every 100 \
	--eval-episodes 3 --ledger ledger-b --seed 1 --out bcq.json --json
runledger svt ledger-svt
runledger learn-a ledger-a
runledger learn-b ledger-b

# --- PriMORL (docs/offline.md: PriMORL) -----------------------------------------------
awk 'NR%10==0 {print > "public.jsonl"; next} {print > "private.jsonl"}' pendulum.jsonl 2>/dev/null || true
run primorl json offline primorl --data private.jsonl --env pendulum --rounds 20 --batch 5 --sac-steps 400 \
	--sac-hidden 16,16 --model-hidden 16,16 --eval-episodes 2 --epsilon 5 --seed 1 --ledger primorl-ledger \
	--out primorl.snap --json
run primorl-public txt offline primorl --data private.jsonl --env pendulum --rounds 20 --batch 5 --sac-steps 400 \
	--sac-hidden 16,16 --model-hidden 16,16 --eval-episodes 2 --epsilon 5 --seed 1 --ledger primorl-ledger-p \
	--public-data public.jsonl --check-every 5 --patience 1
run primorl-nonprivate txt offline primorl --data private.jsonl --env pendulum --rounds 10 --batch 5 --sac-steps 200 \
	--sac-hidden 16,16 --model-hidden 16,16 --eval-episodes 2 --non-private --seed 1
run primorl-mopo json offline primorl --data private.jsonl --env pendulum --mopo --mopo-epochs 1 --sac-steps 200 \
	--sac-hidden 16,16 --model-hidden 16,16 --eval-episodes 2 --seed 1 --json
runledger primorl primorl-ledger

# --- the demo (docs/agent.md) --------------------------------------------
# One user at a time in lockstep; the users' returns, the released policies and so the
# ledger's releases are still not repeatable (the agent serves sessions concurrently:
# docs/agent.md says so), so only the summary's public fields are kept (see below).
run demo json demo --seed 1 --users 64 --K 8 --concurrency 1 --target-return 0 --data agent --log-sessions logs --json
# Kept: fields fixed by the settings and the lockstep pace; dropped: the returns of the
# users and of the released policies (not repeatable, above).
if jq -e 'type == "object"' "$OUT/demo.json" >/dev/null 2>&1; then
	jq 'del(.sim_eval[]?.mean_return, .sim_final_eval.mean_return, .sim_users_mean_return)' "$OUT/demo.json" >"$OUT/demo.json.n" && mv "$OUT/demo.json.n" "$OUT/demo.json"
fi
run demo-verify json ledger verify --data agent --json
# The head's hash covers the releases (not repeatable, above).
jq 'if type == "object" then del(.head.hash) else . end' "$OUT/demo-verify.json" >"$OUT/demo-verify.json.n" 2>/dev/null && mv "$OUT/demo-verify.json.n" "$OUT/demo-verify.json" || rm -f "$OUT/demo-verify.json.n"
run demo-noupdate txt demo --seed 1 --users 4 --K 8 --concurrency 1 --data agent0

# --- agent settings (docs/agent.md): --check-config resolves every setting and
# reads every file, and creates, binds or dials nothing; errors go to stderr (exit 2).
cp -r "$REPO/examples" examples
run agent-config txt agent --config examples/agent.json --check-config --data agent-cc
run agent-user-epsilon txt agent --data agent-cc --env cartpole --user-epsilon 5 --max-updates-per-user 10 --check-config
run agent-bandmf txt agent --data agent-cc --env cartpole --noise bandmf --band 4 --max-updates-per-user 3 --check-config
run agent-bandmf-noband txt agent --data agent-cc --env cartpole --noise bandmf --check-config
run agent-models txt agent --config examples/agent-models.json --check-config --data agent-cc
run agent-secure txt agent --config examples/agent-secure.json --check-config --data agent-cc
run agent-serve-sac txt agent --data agent-cc --env pendulum --serve-policy primorl.snap --check-config
run agent-serve-q txt agent --data agent-cc --env cartpole --serve-policy q.json --check-config
run agent-serve-learner-flag txt agent --data agent-cc --env pendulum --serve-policy primorl.snap --K 4 --check-config
run agent-bad txt agent --data agent-cc --env cartpole --K 0 --z -1 --clip 0 --check-config

# --- ledger integrity (docs/ledger.md: Integrity) --------------------------------------
run ledger-head json ledger head --data chain-ledger --json
run ledger-expect-head txt ledger verify --data chain-ledger --expect-head 1:0000000000000000000000000000000000000000000000000000000000000000
run ledger-backup txt ledger backup --data chain-ledger --out chain-backup
run ledger-backup-verify json ledger verify --data chain-backup --json
# The head file deleted, and ledger/ replaced by an older copy (both refused).
cp -r chain-ledger chain-ledger-nohead && rm -f chain-ledger-nohead/ledger.heads
run ledger-nohead txt ledger verify --data chain-ledger-nohead
if [ -d chain-ledger-1 ]; then
	cp -r chain-ledger chain-ledger-older && rm -rf chain-ledger-older/ledger && cp -r chain-ledger-1/ledger chain-ledger-older/
	run ledger-older txt ledger verify --data chain-ledger-older
fi

# --- audit (docs/accounting.md: Auditing) -------------------------------------------------
run audit json audit --runs 200 --seed 1 --json
run audit-mutants txt audit --mechanism dppg --mutants --runs 2000 --seed 1

# --- report (docs/ledger.md) ----------------------------------------------
run report json report --data ledger-b --out report --json

# --- the files the runs wrote ------------------------------------------------
# Replace the ledger entries' hashes (see runledger) in every output.
if [ -s "$WORK/hashes" ]; then
	sedargs=()
	while read -r h label; do sedargs+=(-e "s/$h/<entry-hash $label>/g"); done <"$WORK/hashes"
	# Errors name an entry by its hash's first 16 digits.
	while read -r h label; do sedargs+=(-e "s/${h:0:16}/<entry-hash $label, prefix>/g"); done <"$WORK/hashes"
	find "$OUT" -type f -exec sed -i "${sedargs[@]}" {} +
	[ -f report/report.html ] && sed -i "${sedargs[@]}" report/report.html
fi
# The report page states when it was made and when each entry was written.
[ -f report/report.html ] && sed -E -i 's/[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z?( UTC)?/<time>/g' report/report.html
# Not listed: the ledgers' and the demo's directories and the backup (Pebble's files, a
# random user key; compared through ledger show/verify/export above), the demo's session log (not repeatable, above) and
# $HOME. The 1,000 expert snapshots are listed as one hash of their hashes.
find . -type f ! -path './home/*' ! -path './agent*/*' ! -path '*ledger*/*' ! -path './logs/*' ! -path './experts/*' ! -path './chain-backup/*' \
	-print0 | sort -z | xargs -0 sha256sum >"$OUT/files.sha256"
[ -d experts ] && echo "$(cd experts && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)  ./experts/ (every file)" >>"$OUT/files.sha256"
sed -i "s#$WORK#<work>#g" "$OUT"/* 2>/dev/null || true

echo "seeded-outputs: done in $((SECONDS - START)) s: $OUT" >&2
