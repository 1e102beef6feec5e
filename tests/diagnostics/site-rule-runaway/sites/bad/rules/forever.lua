-- A site rule that never ends must be stopped, not hang the build.
rule { name = "forever", description = "loops", check = function(site)
  while true do end
end }
