-- Base modules are written name/version (a version-less name follows the site's default and is a warning).

local function check_module(path, name)
  if not name:match("^[%w_.+%-]+[%w_.+%-/]*$") or name:find("//", 1, true) or name:sub(-1) == "/" then
    error_at(path, ("base module '%s' is not a module name such as 'LUMI/24.03'"):format(name))
  elseif not name:find("/", 1, true) then
    warn_at(path, ("base module '%s' has no version: write name/version so the stack does not change with the site's default"):format(name))
  end
end

rule {
  name = "base-modules",
  description = "site.base_modules and stack base_modules look like name/version",
  check = function(site)
    for i, name in ipairs(site.site.base_modules) do
      check_module(pathof(site.site.base_modules, i), name)
    end
    for _, stack in ipairs(site.stacks) do
      for i, name in ipairs(stack.base_modules) do check_module(pathof(stack.base_modules, i), name) end
    end
  end,
}
