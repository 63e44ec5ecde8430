-- wrk script: POST an OIP v2 JSON inference request, one FP32 [1, 64] tensor named "input" -- the request
-- loadtest/run.sh's tensor_request writes (element i is (i % 17) / 17 - 0.5, printed with 4 decimals).
--   wrk -t1 -c16 -d10s --latency -s loadtest/wrk/oip-json.lua http://127.0.0.1:8000/v2/models/noop/infer
local values = {}
for i = 0, 63 do
  values[#values + 1] = string.format("%.4f", (i % 17) / 17 - 0.5)
end

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 64], "data": ['
  .. table.concat(values, ", ") .. ']}]}'
