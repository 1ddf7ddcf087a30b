-- bench/programs/bench.lua: the Lua workload of bench/pgo.sh (calls, tables,
-- strings, closures: a mixed interpreter workload). lua bench.lua SCALE
local function fib(n) if n < 2 then return n end return fib(n-1) + fib(n-2) end
local function sieve(n)
  local is = {}
  for i = 2, n do is[i] = true end
  for i = 2, n do if is[i] then for j = i*i, n, i do is[j] = false end end end
  local c = 0 for i = 2, n do if is[i] then c = c + 1 end end
  return c
end
local function strings(n)
  local t = {}
  for i = 1, n do t[#t+1] = string.format("%d:%s", i, string.rep("x", i % 7)) end
  local s = table.concat(t, ",")
  local c = 0 for w in s:gmatch("%d+") do c = c + #w end
  return c
end
local function sortit(n)
  local t = {}
  local x = 12345
  for i = 1, n do x = (x * 1103515245 + 12345) % 2147483648; t[i] = x end
  table.sort(t, function(a, b) return a < b end)
  return t[1]
end
local scale = tonumber(arg and arg[1]) or 1
local r = 0
for k = 1, scale do
  r = r + fib(27) + sieve(400000) + strings(60000) + sortit(100000)
end
print(r)
