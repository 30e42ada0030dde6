# agentd %post: as %systemd_post does, a first install applies the systemd preset policy
# (RHEL and Fedora ship "disable *" for units they do not know, so the admin enables the
# agent with systemctl enable --now once the coordinator URL and token are in place).
if [ "$1" -eq 1 ] && [ -x /usr/bin/systemctl ]; then
  systemctl --no-reload preset agentd.service >/dev/null 2>&1 || :
fi
exit 0
