# agentd %preun: on erase (not upgrade) disable and stop the agent, as %systemd_preun; it
# drains its running jobs first (up to drain_timeout).
if [ "$1" -eq 0 ] && [ -x /usr/bin/systemctl ]; then
  systemctl --no-reload disable --now agentd.service >/dev/null 2>&1 || :
fi
exit 0
