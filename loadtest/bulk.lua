-- Large `_bulk` requests: NDJSON bodies of SG_BODY_BYTES (default 5MB: 5,242,880 bytes),
-- sent with Content-Length; the same body every time (wrk sends a static request).
-- Environment: SG_USER, SG_PASS, SG_HOST (see common.lua), SG_BODY_BYTES, SG_BULK_DOC.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local common = dofile(dir .. "common.lua")

-- A spec 4.1 bulk body of exactly `size` bytes: pairs of an action line (`index` with
-- `_index`, `_type`, `_id`) and a site-content document (spec 2.4 fields, about 1KB, as
-- the bulk-load workflow makes them); the last document's summary is padded so the
-- length is exact. SG_BULK_DOC=tiny makes 50-byte documents instead (the worst case for
-- the edge's per-line action counting).
local function site_doc(i)
  local words = "search cluster index mapping shard replica query analyzer token "
  return string.format(
    '{"objectID":"page-%06d","date":1714000000,"description":"%s","dir":"docs/guide/",'
      .. '"expirydate":1893456000,"fuzzywordcount":1200,"keywords":["search","hosting"],'
      .. '"kind":"page","lang":"en","lastmod":1714003600,"permalink":"https://example.org/docs/guide/page-%06d/",'
      .. '"publishdate":"2024-04-25T00:00:00Z","readingtime":6,"relpermalink":"/docs/guide/page-%06d/",'
      .. '"summary":"%s","title":"Guide page %d","type":"docs","url":"/docs/guide/page-%06d/",'
      .. '"weight":%d,"wordcount":1187,"section":"docs","tags":["guide","search"],'
      .. '"categories":["documentation"],"authors":["searchgate"]}',
    i, string.rep(words, 2), i, i, string.rep(words, 6), i, i, i % 100)
end

local function bulk_body(size, tiny)
  local parts, len, i = {}, 0, 0
  while true do
    i = i + 1
    local action = string.format('{"index":{"_index":"site","_type":"doc","_id":"page-%06d"}}\n', i)
    local doc = tiny and '{"title":"Lorem ipsum dolor sit amet","n":12345}' or site_doc(i)
    local pair = action .. doc .. "\n"
    if len + #pair + 256 > size then
      -- Last pair (room for it was kept): pad a summary-like field so the body is
      -- exactly `size` bytes.
      local head = action .. '{"objectID":"page-last","summary":"'
      local tail = '"}\n'
      local pad = size - len - #head - #tail
      if pad < 0 then
        error("bulk.lua: SG_BODY_BYTES too small")
      end
      parts[#parts + 1] = head .. string.rep("x", pad) .. tail
      return table.concat(parts)
    end
    parts[#parts + 1] = pair
    len = len + #pair
  end
end

function init(args)
  local size = tonumber(common.env("SG_BODY_BYTES", "5242880"))
  wrk.method = "POST"
  wrk.path = "/_bulk"
  -- Merged into wrk.headers, which holds the URL's Host when SG_HOST is not set.
  for k, v in pairs(common.headers({ ["Content-Type"] = "application/x-ndjson" })) do
    wrk.headers[k] = v
  end
  wrk.body = bulk_body(size, os.getenv("SG_BULK_DOC") == "tiny")
end

function setup(thread)
  common.setup(thread)
end

-- A `_bulk` answered 2xx can still have failed items (`"errors":true`, e.g. an
-- index_not_found_exception per item): each such answer is an error of the run. The flag
-- is the answer's second key in Elasticsearch and OpenSearch, so its first bytes suffice.
item_errors = 0

function response(status, headers, body)
  if status >= 200 and status < 300 and body ~= nil
      and body:sub(1, 256):find('"errors":true', 1, true) then
    item_errors = item_errors + 1
  end
end

function done(summary, latency, requests)
  common.report(summary, latency)
end
