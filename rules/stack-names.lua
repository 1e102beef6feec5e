-- Stack names and versions: valid module and EasyBuild file names, each published once.

local valid = "^[A-Za-z0-9][A-Za-z0-9_.+%-]*$"

rule {
  name = "stack-names",
  description = "stack names and versions are valid, unique module names and EasyBuild file names",
  check = function(site)
    local modules, lower, easyconfigs = {}, {}, {}
    for _, stack in ipairs(site.stacks) do
      local where = pathof(stack)
      if not stack.name:match(valid) then
        error_at(pathof(stack, "name"), ("stack name '%s' is not a valid module name "
          .. "(a letter or digit, then letters, digits, '_', '.', '+', '-')"):format(stack.name))
      end
      if not stack.module_version:match(valid) then
        error_at(pathof(stack, "version"), ("module version '%s' is not a valid module file name "
          .. "(a letter or digit, then letters, digits, '_', '.', '+', '-')"):format(stack.module_version))
      end
      local full = stack.module_full_name
      local easyconfig = stack.name .. "-" .. stack.version .. stack.versionsuffix .. ".eb"
      if modules[full] then
        error_at(where, ("stack '%s' is defined twice (first as %s)"):format(full, modules[full]))
      elseif lower[full:lower()] then
        warn_at(where, ("stack '%s' differs from '%s' only in case"):format(full, lower[full:lower()]))
      elseif easyconfigs[easyconfig] then
        error_at(where, ("easyconfig file name '%s' is also the one of stack '%s'"):format(easyconfig, easyconfigs[easyconfig]))
      end
      modules[full] = modules[full] or where
      lower[full:lower()] = lower[full:lower()] or full
      easyconfigs[easyconfig] = easyconfigs[easyconfig] or full
    end
  end,
}
