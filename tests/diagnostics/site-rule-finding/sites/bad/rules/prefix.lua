-- Site policy: stacks are installed under /appl.
rule { name = "prefix-policy", description = "install_prefix is under /appl", check = function(site)
  if site.site.install_prefix:sub(1, 6) ~= "/appl/" then
    error_at(pathof(site.site, "install_prefix"), "install_prefix must be under /appl/")
  end
end }
