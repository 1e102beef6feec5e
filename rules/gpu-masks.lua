-- GPU topology: one core list per GPU, each core in at most one list, inside the node, usable after the reserved cores.

-- "8-15" or "3,5,7-9" for a sorted list of core ids.
local function ranges(cores)
  local out, i = {}, 1
  while i <= #cores do
    local j = i
    while j < #cores and cores[j + 1] == cores[j] + 1 do j = j + 1 end
    out[#out + 1] = (j > i) and (cores[i] .. "-" .. cores[j]) or tostring(cores[i])
    i = j + 1
  end
  return table.concat(out, ",")
end

local function sorted_keys(set)
  local list = {}
  for k in pairs(set) do list[#list + 1] = k end
  table.sort(list)
  return list
end

-- How many cores ranks of one GPU need: core_offset into the usable cores, then cores_per_rank.
local function cores_needed(binding)
  if binding.style == "none" then return 1 end
  return binding.core_offset + math.max(binding.cores_per_rank, 1)
end

local function check_device(site, gpu, cores, owner, reserved)
  local hw, binding = site.hardware, site.binding
  local outside, twice, shared, usable = {}, {}, {}, 0
  local seen = {}
  for _, c in ipairs(cores) do
    if c < 0 or c >= hw.cores_per_node then
      outside[#outside + 1] = c
    elseif seen[c] then
      twice[#twice + 1] = c
    elseif owner[c] then
      shared[owner[c]] = shared[owner[c]] or {}
      table.insert(shared[owner[c]], c)
    else
      owner[c] = gpu
      if not reserved[c] then usable = usable + 1 end
    end
    seen[c] = true
  end
  if #cores == 0 then
    error_at(cores, ("GPU %d has no cores"):format(gpu))
    return
  end
  local wrong = #outside > 0 or #twice > 0 or next(shared) ~= nil
  if #outside > 0 then
    error_at(cores, ("GPU %d lists cores %s, outside the node's %d cores (0-%d)")
      :format(gpu, ranges(outside), hw.cores_per_node, hw.cores_per_node - 1))
  end
  if #twice > 0 then error_at(cores, ("GPU %d lists cores %s twice"):format(gpu, ranges(twice))) end
  for _, other in ipairs(sorted_keys(shared)) do
    error_at(cores, ("GPU %d shares cores %s with GPU %d"):format(gpu, ranges(shared[other]), other))
  end
  if wrong then return end  -- counting usable cores of a wrong list would only repeat the error
  local needed = cores_needed(binding)
  if usable == 0 then
    error_at(cores, ("GPU %d has no cores left after the reserved cores"):format(gpu))
  elseif usable < needed then
    error_at(cores, ("GPU %d has %d usable cores but the binding needs %d (core_offset %d + cores_per_rank %d)")
      :format(gpu, usable, needed, binding.core_offset, binding.cores_per_rank))
  end
end

rule {
  name = "gpu-masks",
  description = "device_cores gives every GPU its own cores, inside the node, with enough left after the reserved ones",
  check = function(site)
    local hw = site.hardware
    if hw.devices_per_node == 0 then return end
    local masks = hw.device_cores
    if #masks ~= hw.devices_per_node then
      error_at(masks, ("%d CPU masks for %d GPUs"):format(#masks, hw.devices_per_node))
    end
    local reserved = {}
    for _, c in ipairs(hw.reserved_cores) do reserved[c] = true end
    local owner = {}
    for i, cores in ipairs(masks) do check_device(site, i - 1, cores, owner, reserved) end
  end,
}
