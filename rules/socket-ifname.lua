-- NCCL_SOCKET_IFNAME names only NICs the site declares (prefixes such as "hsn", "=" exact names, "^" exclusions).

local function matches(nic, entry, exact)
  if exact then return nic == entry end
  return nic:sub(1, #entry) == entry
end

local function any_nic(nics, entry, exact)
  for _, nic in ipairs(nics) do
    if matches(nic, entry, exact) then return true end
  end
  return false
end

-- NCCL's syntax: an optional "^" (exclude the list), an optional "=" (exact names), then a
-- comma-separated list of interface name prefixes.
local function parse(value)
  local spec, exclude, exact = value, false, false
  if spec:sub(1, 1) == "^" then exclude, spec = true, spec:sub(2) end
  if spec:sub(1, 1) == "=" then exact, spec = true, spec:sub(2) end
  local entries = {}
  for entry in spec:gmatch("[^,]+") do entries[#entries + 1] = entry end
  return entries, exclude, exact
end

local function check_value(site, path, value)
  local nics = site.hardware.nics
  local declared_list = #nics > 0 and table.concat(nics, ", ") or "hardware.nics is empty"
  local entries, exclude, exact = parse(value)
  if #entries == 0 then
    error_at(path, ("NCCL_SOCKET_IFNAME '%s' names no interface"):format(value))
    return
  end
  if exclude then
    for _, nic in ipairs(nics) do
      local kept = true
      for _, entry in ipairs(entries) do
        if matches(nic, entry, exact) then kept = false end
      end
      if kept then return end
    end
    error_at(path, ("NCCL_SOCKET_IFNAME '%s' excludes every NIC the site declares (%s)"):format(value, declared_list))
    return
  end
  for _, entry in ipairs(entries) do
    if not any_nic(nics, entry, exact) then
      error_at(path, ("NCCL_SOCKET_IFNAME names '%s', which %s none of the site's NICs (%s)")
        :format(entry, exact and "is" or "matches", declared_list))
    end
  end
end

rule {
  name = "socket-ifname",
  description = "NCCL_SOCKET_IFNAME in collectives.env and stack env names only the site's NICs",
  check = function(site)
    local envs = { site.collectives.env }
    for _, stack in ipairs(site.stacks) do envs[#envs + 1] = stack.env end
    for _, env in ipairs(envs) do
      local value = env.NCCL_SOCKET_IFNAME
      if value then check_value(site, pathof(env, "NCCL_SOCKET_IFNAME"), value) end
    end
  end,
}
