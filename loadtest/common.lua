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
-- `value_us count` lines, after a `#` header with the run's facts (`requests=`,
-- `duration_us=`, `end_unix_s=`, and `label=` / `target=` from SG_LABEL / SG_TARGET); the
-- runner reads every latency figure it prints from this file, through
-- `searchgate latency --from-wrk` (percentiles, HdrHistogram's `.hgrm`, the SVG plot), so
-- they are computed once, one way. wrk's Lua API gives percentiles, not counts (indexing
-- `latency[i]` does not return bucket counts in Debian's wrk 4.1.0), so the counts are
-- rebuilt from `latency:percentile(p)` at 241 points that halve the distance to 100% every
-- 10 steps (as HdrHistogram's own ticks do), down to 99.9999%, plus the quantiles the
-- reports print (p50, p75, p90, p99, p99.9, p99.99, p99.999) and the maximum. Up to each
-- point q the file holds ceil(q * requests) requests, the count at which HdrHistogram
-- reads quantile q, so the rebuilt distribution has wrk's values at those quantiles.
local REPORTED = { 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 0.99999 }

local function rebuild_points()
  local qs, seen = {}, {}
  local function add(q)
    if not seen[q] then
      seen[q] = true
      qs[#qs + 1] = q
    end
  end
  for k = 0, 240 do
    add(1 - 2 ^ (-k / 10))
  end
  for _, q in ipairs(REPORTED) do
    add(q)
  end
  table.sort(qs)
  return qs
end

function M.write_latency(summary, latency)
  local path = os.getenv("SG_LATENCY_FILE")
  if path == nil or path == "" then
    return
  end
  local f = assert(io.open(path, "w"))
  local total = summary.requests
  f:write(string.format("# wrk latency counts rebuilt from its percentiles: value_us count\n"
    .. "# requests=%d duration_us=%d end_unix_s=%d\n", total, summary.duration, os.time()))
  for _, key in ipairs({ "SG_LABEL", "SG_TARGET" }) do
    local v = os.getenv(key)
    if v ~= nil and v ~= "" then
      f:write(string.format("# %s=%s\n", key:sub(4):lower(), v))
    end
  end
  local done = 0
  for _, q in ipairs(rebuild_points()) do
    local n = math.ceil(total * q) - done
    if n > 0 then
      f:write(string.format("%d %d\n", latency:percentile(q * 100), n))
      done = done + n
    end
  end
  if total - done > 0 then
    f:write(string.format("%d %d\n", latency.max, total - done))
  end
  f:close()
end

-- Scripts whose answers can fail inside a 2xx (a `_bulk` with `"errors":true`) count them
-- per thread in `item_errors`; `setup` keeps the threads so `done` can add them up.
local threads = {}

function M.setup(thread)
  threads[#threads + 1] = thread
end

function M.item_errors()
  local n = 0
  for _, t in ipairs(threads) do
    n = n + (tonumber(t:get("item_errors")) or 0)
  end
  return n
end

-- One line for the runner: counts and errors. Latency comes from the counts file only.
function M.report(summary, latency)
  M.write_latency(summary, latency)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d bytes_read=%d connect_errors=%d read_errors=%d "
      .. "write_errors=%d status_errors=%d timeouts=%d item_errors=%d max=%d\n",
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, M.item_errors(), latency.max))
end

return M
