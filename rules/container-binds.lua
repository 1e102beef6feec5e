-- Container binds: absolute host and container paths, each container path bound once.

local function trim_slash(p)
  return (p:gsub("(.)/+$", "%1"))
end

rule {
  name = "container-binds",
  description = "container.binds use absolute paths and bind each container path once",
  check = function(site)
    if not site.container.enabled then return end
    local first = {}
    for i, bind in ipairs(site.container.binds) do
      for _, side in ipairs({ "host", "container" }) do
        local p = bind[side]
        if p:sub(1, 1) ~= "/" then
          error_at(pathof(bind, side), ("bind %s path '%s' is not absolute"):format(side, p))
        end
      end
      local target = trim_slash(bind.container)
      if first[target] then
        error_at(bind, ("container path '%s' is bound twice (first by %s)"):format(target, first[target]))
      else
        first[target] = pathof(site.container.binds, i)
      end
    end
  end,
}
