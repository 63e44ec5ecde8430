-- wrk script: POST the same FP32 [1, 64] tensor as oip-json.lua with the OIP binary tensor extension: a JSON
-- header (the input with parameters.binary_data_size, and binary_data_output so the answer is binary too),
-- then the 256 raw little-endian bytes; header Inference-Header-Content-Length says where the JSON ends.
-- The body is built once, here (Lua strings hold bytes; LuaJIT's ffi lays out the floats).
--   wrk -t1 -c16 -d10s --latency -s loadtest/wrk/oip-binary.lua http://127.0.0.1:8000/v2/models/noop/infer
local ffi = require("ffi")
assert(ffi.abi("le"), "oip-binary.lua writes native floats, so it needs a little-endian machine")

local n = 64
local floats = ffi.new("float[?]", n)
for i = 0, n - 1 do
  floats[i] = tonumber(string.format("%.4f", (i % 17) / 17 - 0.5))
end
local header = '{"inputs":[{"name":"input","datatype":"FP32","shape":[1,64],'
  .. '"parameters":{"binary_data_size":' .. (4 * n) .. '}}],"parameters":{"binary_data_output":true}}'

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/octet-stream"
wrk.headers["Inference-Header-Content-Length"] = tostring(#header)
wrk.body = header .. ffi.string(floats, 4 * n)
