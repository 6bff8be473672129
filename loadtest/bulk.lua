-- Large `_bulk` requests: NDJSON bodies of SG_BODY_BYTES (default 5MB: 5,242,880 bytes),
-- sent with Content-Length; the same body every time (wrk sends a static request).
-- Environment: SG_USER, SG_PASS, SG_HOST (see common.lua), SG_BODY_BYTES.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local common = dofile(dir .. "common.lua")

-- An NDJSON bulk body of exactly `size` bytes: index actions and documents, padded in
-- the last document's text so the length is exact.
local function bulk_body(size)
  local pair = '{"index":{"_index":"books"}}\n{"title":"Lorem ipsum dolor sit amet","n":12345}\n'
  local head = '{"index":{"_index":"books"}}\n{"title":"'
  local tail = '"}\n'
  local count = math.floor((size - #head - #tail) / #pair)
  local body = string.rep(pair, count)
  local pad = size - #body - #head - #tail
  return body .. head .. string.rep("x", pad) .. tail
end

function init(args)
  local size = tonumber(common.env("SG_BODY_BYTES", "5242880"))
  wrk.method = "POST"
  wrk.path = "/_bulk"
  wrk.headers = common.headers({ ["Content-Type"] = "application/x-ndjson" })
  wrk.body = bulk_body(size)
end

function done(summary, latency, requests)
  common.report(summary, latency)
end
