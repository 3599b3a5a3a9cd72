# A real Prometheus for e2e tests (sourced after lib/common.sh; Debian package `prometheus`, scripts/deps.sh).
#   start_prometheus <dir> <logfile> <job>=<host:port>...   writes <dir>/prometheus.yml (every target scraped
#       every 1 s), starts `prometheus` on a free loopback port with its store in <dir>/data, and waits for
#       /-/ready. Sets PROM_URL and PROM_PID; the pid joins ROLE_PIDS, so stop_roles stops it.
#   prom_query <promql>              the JSON `data.result` of an instant query, on stdout
#   prom_count <promql>              how many series the query returns
#   wait_prom_targets_up <timeout>   every configured target scraped and up == 1
#   wait_prom_scraped_since <epoch-s> <timeout>   every target's last scrape started after <epoch-s>
PROMETHEUS=${PROMETHEUS:-prometheus}

start_prometheus() {
  local dir=$1 logf=$2 t job addr port; shift 2
  command -v "$PROMETHEUS" >/dev/null || { echo "no prometheus binary (scripts/deps.sh installs it)" >&2; return 1; }
  mkdir -p "$dir/data"
  {
    echo "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}"
    echo "scrape_configs:"
    for t in "$@"; do
      job=${t%%=*} addr=${t#*=}
      echo "- job_name: $job"
      echo "  static_configs: [{targets: ['$addr']}]"
    done
  } >"$dir/prometheus.yml"
  port=$(free_port)
  "$PROMETHEUS" --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
    --storage.tsdb.retention.time=2h --web.listen-address="127.0.0.1:$port" </dev/null >"$logf" 2>&1 &
  PROM_PID=$!
  ROLE_PIDS+=("$PROM_PID")
  PROM_URL="http://127.0.0.1:$port"
  _prom_ready() { kill -0 "$PROM_PID" && curl -fsS "$PROM_URL/-/ready"; }
  wait_until "prometheus ready" 60 _prom_ready || { tail -n 20 "$logf" >&2; return 1; }
}

prom_query() {
  curl -fsS --max-time 20 "$PROM_URL/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["status"]=="success", d; print(json.dumps(d["data"]["result"]))'
}
prom_count() { prom_query "$1" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }

# The active targets as "<job> <health> <lastScrape unix seconds>" lines.
_prom_targets() {
  curl -fsS --max-time 20 "$PROM_URL/api/v1/targets?state=active" | python3 -c '
import calendar, json, re, sys, time
for t in json.load(sys.stdin)["data"]["activeTargets"]:
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z$", t.get("lastScrape", ""))
    s = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) + float(m.group(2) or 0) if m else 0
    print(t["labels"]["job"], t["health"], "%.3f" % s)'
}

wait_prom_targets_up() {
  _all_up() {
    local t
    t=$(_prom_targets) || return 1
    [ -n "$t" ] && ! grep -qv ' up ' <<<"$t" && [ "$(prom_count 'up == 1')" -eq "$(wc -l <<<"$t")" ]
  }
  wait_until "every Prometheus target up" "$1" _all_up || { _prom_targets >&2; return 1; }
}

wait_prom_scraped_since() {
  local since=$1 timeout=$2
  _scraped_after() { _prom_targets | awk -v s="$since" '$3 <= s {bad = 1} END {exit bad}'; }
  wait_until "every target scraped after $since" "$timeout" _scraped_after || { _prom_targets >&2; return 1; }
}
