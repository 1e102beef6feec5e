-- No variable is set twice with different values: a stack's env against the site's collectives.env.

rule {
  name = "env-conflicts",
  description = "a stack's env does not give a collectives.env variable a different value",
  check = function(site)
    local site_env = site.collectives.env
    for _, stack in ipairs(site.stacks) do
      for _, pair in ipairs(stack.env) do
        local other = site_env[pair.name]
        if other ~= nil and other ~= pair.value then
          error_at(pair, ("%s is '%s' here but '%s' in collectives.env: the module can export only one")
            :format(pair.name, pair.value, other))
        end
      end
    end
  end,
}
