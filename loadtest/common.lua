-- Shared by the wrk scripts of loadtest/: Basic credentials, settings from the
-- environment (every wrk Lua state sees the same), and the machine-readable result line
-- that loadtest/run.py parses.
--
-- Environment: SG_USER, SG_PASS (credentials), SG_HOST (Host header; default: the URL's).
local M = {}

local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

-- Standard base64 with padding (RFC 4648), for the Authorization header.
function M.base64(s)
  local out = {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local n = a * 65536 + (b or 0) * 256 + (c or 0)
    local c1 = math.floor(n / 262144) % 64
    local c2 = math.floor(n / 4096) % 64
    local c3 = math.floor(n / 64) % 64
    local c4 = n % 64
    out[#out + 1] = alphabet:sub(c1 + 1, c1 + 1) .. alphabet:sub(c2 + 1, c2 + 1)
      .. (b and alphabet:sub(c3 + 1, c3 + 1) or "=")
      .. (c and alphabet:sub(c4 + 1, c4 + 1) or "=")
  end
  return table.concat(out)
end

function M.basic(user, pass)
  return "Basic " .. M.base64(user .. ":" .. pass)
end

function M.env(name, default)
  local v = os.getenv(name)
  if v == nil or v == "" then
    if default == nil then
      error("wrk script: environment variable " .. name .. " is not set")
    end
    return default
  end
  return v
end

-- Headers every request carries: Host (when SG_HOST is set) and Basic credentials.
function M.headers(extra)
  local h = {}
  local host = os.getenv("SG_HOST")
  if host ~= nil and host ~= "" then
    h["Host"] = host
  end
  h["Authorization"] = M.basic(M.env("SG_USER"), M.env("SG_PASS"))
  for k, v in pairs(extra or {}) do
    h[k] = v
  end
  return h
end

-- When SG_LATENCY_FILE is set, writes the run's latency distribution there as
-- `value_us count` lines; the runner turns them into HdrHistogram's percentile
-- distribution and an SVG plot (`searchgate latency --from-wrk`). wrk's Lua API gives
-- percentiles, not counts (indexing `latency[i]` does not return bucket counts in Debian's
-- wrk 4.1.0), so the counts are rebuilt from `latency:percentile(p)` at 241 points that
-- halve the distance to 100% every 10 steps (as HdrHistogram's own ticks do), down to
-- 99.9999%, plus the maximum: the rebuilt distribution has wrk's percentiles at those
-- points.
function M.write_latency(summary, latency)
  local path = os.getenv("SG_LATENCY_FILE")
  if path == nil or path == "" then
    return
  end
  local f = assert(io.open(path, "w"))
  f:write("# wrk latency counts rebuilt from its percentiles: value_us count\n")
  local total = summary.requests
  local done = 0
  for k = 0, 240 do
    local p = 100 * (1 - 2 ^ (-k / 10))
    local n = math.floor(total * p / 100 + 0.5) - done
    if n > 0 then
      f:write(string.format("%d %d\n", latency:percentile(p), n))
      done = done + n
    end
  end
  if total - done > 0 then
    f:write(string.format("%d %d\n", latency.max, total - done))
  end
  f:close()
end

-- One line for the runner: counts, errors and latency percentiles in microseconds.
function M.report(summary, latency)
  M.write_latency(summary, latency)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d bytes_read=%d connect_errors=%d read_errors=%d "
      .. "write_errors=%d status_errors=%d timeouts=%d p50=%d p90=%d p99=%d p999=%d max=%d\n",
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max))
end

return M
