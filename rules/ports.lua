-- Master ports: master_port_base .. master_port_base + master_port_span - 1 lies within 1024..65535.

rule {
  name = "ports",
  description = "every MASTER_PORT the runscripts may pick is an unprivileged port (1024..65535)",
  check = function(site)
    local c = site.collectives
    local base, span = c.master_port_base, c.master_port_span
    if base < 1024 then
      error_at(pathof(c, "master_port_base"), ("master_port_base %d is a privileged port (use 1024..65535)"):format(base))
    end
    if span < 1 then
      error_at(pathof(c, "master_port_span"), ("master_port_span %d leaves no port to pick"):format(span))
    elseif base + span - 1 > 65535 then
      error_at(pathof(c, "master_port_span"), ("master ports %d..%d run past 65535"):format(base, base + span - 1))
    end
  end,
}
