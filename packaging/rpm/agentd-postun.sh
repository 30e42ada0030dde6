# agentd %postun: after an upgrade, restart the agent if it was running, as
# %systemd_postun_with_restart. RPM has no purge: /var/lib/agentd and the token stay.
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || :
  if [ "$1" -ge 1 ]; then
    systemctl try-restart agentd.service >/dev/null 2>&1 || :
  fi
fi
exit 0
