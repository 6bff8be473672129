-- Small search requests with Basic credentials: GET and POST `_search`, alternating.
-- Environment: SG_USER, SG_PASS, SG_HOST (see common.lua), SG_INDEX (default "books").
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local common = dofile(dir .. "common.lua")

local requests
local n = 0

function init(args)
  local index = common.env("SG_INDEX", "books")
  local get = common.headers()
  local post = common.headers({ ["Content-Type"] = "application/json" })
  local body = '{"query":{"match":{"title":"rust"}},"size":10}'
  requests = {
    wrk.format("GET", "/" .. index .. "/_search?q=title:rust", get),
    wrk.format("POST", "/" .. index .. "/_search", post, body),
  }
end

function request()
  n = n + 1
  return requests[n % 2 + 1]
end

function done(summary, latency, requests)
  common.report(summary, latency)
end
