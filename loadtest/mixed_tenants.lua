-- Small search requests spread over many clusters: each request goes to another cluster's
-- Host with that cluster's credentials, stepping through the list with a stride prime to
-- its length so consecutive requests on a connection hit different clusters.
-- Environment: SG_TENANTS_FILE, a file of lines `<host> <user> <pass>`.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local common = dofile(dir .. "common.lua")

local requests = {}
local n = 0
local stride = 1

local function gcd(a, b)
  while b ~= 0 do
    a, b = b, a % b
  end
  return a
end

function init(args)
  local path = common.env("SG_TENANTS_FILE")
  for line in io.lines(path) do
    local host, user, pass = line:match("^(%S+)%s+(%S+)%s+(%S+)$")
    if host then
      local h = { ["Host"] = host, ["Authorization"] = common.basic(user, pass) }
      requests[#requests + 1] = wrk.format("GET", "/logs/_search?q=level:error", h)
    end
  end
  if #requests == 0 then
    error("mixed_tenants.lua: no tenants in " .. path)
  end
  stride = 7919
  while gcd(stride, #requests) ~= 1 do
    stride = stride + 2
  end
  n = math.random(#requests) - 1
end

function request()
  n = (n + stride) % #requests
  return requests[n + 1]
end

function done(summary, latency, requests)
  common.report(summary, latency)
end
