# CPack settings for the jobctl and agentd packages (.deb and .rpm). Included last by
# packaging/CMakeLists.txt, after every install() rule. The comments name the check that
# each less obvious setting answers.

set(maintainer "jobctl maintainers <maintainers@users.noreply.a-seed-a05c4d7d.example>")
set(JOBCTL_PACKAGE_LICENSE "LicenseRef-jobctl-unlicensed" CACHE STRING
    "License tag of the .rpm; keep it in step with packaging/copyright")

set(CPACK_PACKAGE_NAME jobctl)
set(CPACK_PACKAGE_VENDOR "jobctl")
set(CPACK_PACKAGE_CONTACT "${maintainer}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_RELOCATABLE OFF)
# CPack DEB puts this summary in front of each component's description unless it is CPack's
# default text; the components have their own summaries (first line of their description).
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CMAKE_PROJECT_NAME} built using CMake")
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL ${components})
set(CPACK_COMPONENTS_GROUPING IGNORE)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_RPM_COMPONENT_INSTALL ON)
set(CPACK_GENERATOR DEB RPM)
set(CPACK_PRE_BUILD_SCRIPTS "${pkgdir}/cpack_pre_build.cmake")

set(jobctl_summary "distributed crontab: command line and coordinator")
set(jobctl_description
"jobctl keeps the cron jobs of many hosts in one jobs.toml file and runs each
firing once, on one host or sharded across several, with every run and every
line of its output kept in one place.

This package holds the jobctl command line, with which admins and CI apply,
trigger and follow jobs, and the coordinator it runs as `jobctl serve` under
jobctl-coordinator.service: the schedules, the SQLite store of jobs and runs,
the leases that give each shard to one agent, and the HTTP API.")
set(agentd_summary "distributed crontab agent: runs jobctl jobs on this host")
set(agentd_description
"agentd connects to a jobctl coordinator, claims the shards of the runs that
may go to this host, runs them as subprocesses under their run_as users,
streams their output back and reports their results. A job never outlives the
lease its agent holds on it.

Install it on every host that runs jobs, put the coordinator URL in
/etc/agentd/agentd.toml and the agent token in /etc/agentd/token.")

# --- .deb -----------------------------------------------------------------------------------
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${JOBCTL_PACKAGE_RELEASE})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${maintainer}")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Both packages come from one source, named as in packaging/changelog.
set(CPACK_DEBIAN_PACKAGE_SOURCE jobctl)
# dpkg-shlibdeps fills in Depends from the libraries the binaries link.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# CPack would give 0775 scripts from a group-writable checkout; lintian wants 0755/0644.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_JOBCTL_PACKAGE_NAME jobctl)
set(CPACK_DEBIAN_JOBCTL_DESCRIPTION "${jobctl_summary}\n${jobctl_description}")
# adduser for the postinst's system user; the rest comes from shlibdeps.
set(CPACK_DEBIAN_JOBCTL_PACKAGE_DEPENDS "adduser")
# CPack writes no conffiles list of its own (lintian: file-in-etc-not-marked-as-conffile).
set(CPACK_DEBIAN_JOBCTL_PACKAGE_CONTROL_EXTRA
    "${pkgdir}/deb/jobctl/conffiles;${pkgdir}/deb/jobctl/postinst;${pkgdir}/deb/jobctl/prerm;${pkgdir}/deb/jobctl/postrm")
set(CPACK_DEBIAN_AGENTD_PACKAGE_NAME agentd)
set(CPACK_DEBIAN_AGENTD_DESCRIPTION "${agentd_summary}\n${agentd_description}")
set(CPACK_DEBIAN_AGENTD_PACKAGE_CONTROL_EXTRA
    "${pkgdir}/deb/agentd/conffiles;${pkgdir}/deb/agentd/postinst;${pkgdir}/deb/agentd/prerm;${pkgdir}/deb/agentd/postrm")

# --- .rpm -----------------------------------------------------------------------------------
set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
set(CPACK_RPM_PACKAGE_RELEASE ${JOBCTL_PACKAGE_RELEASE})
set(CPACK_RPM_PACKAGE_LICENSE "${JOBCTL_PACKAGE_LICENSE}")
set(CPACK_RPM_PACKAGE_GROUP "Applications/System")
set(CPACK_RPM_CHANGELOG_FILE "${outdir}/rpm-changelog")
# No /usr/lib/.build-id links: they serve -debuginfo packages, and there are none.
set(CPACK_RPM_SPEC_MORE_DEFINE "%define _build_id_links none")
# The scriptlets call systemctl (and, for jobctl, useradd) as %systemd_requires would.
set(CPACK_RPM_PACKAGE_REQUIRES_POST systemd)
set(CPACK_RPM_PACKAGE_REQUIRES_PREUN systemd)
set(CPACK_RPM_PACKAGE_REQUIRES_POSTUN systemd)
# Directories other packages own (rpmlint: standard-dir-owned-by-package).
set(CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION
    /usr/sbin /usr/lib/systemd /usr/lib/systemd/system /usr/share/man /usr/share/man/man1
    /usr/share/man/man5 /usr/share/man/man7 /usr/share/man/man8 /usr/share/bash-completion
    /usr/share/bash-completion/completions /usr/share/zsh /usr/share/zsh/site-functions
    /usr/share/fish /usr/share/fish/vendor_completions.d /var /var/lib)
# CPack marks every file with an absolute destination %config, units included; these lists
# say what each really is. (A bare path here crashes CMake 3.25: always give a directive.)
set(CPACK_RPM_JOBCTL_PACKAGE_NAME jobctl)
# RPM summaries are capitalized (rpmlint: summary-not-capitalized), Debian synopses are not.
set(CPACK_RPM_JOBCTL_PACKAGE_SUMMARY "Distributed crontab: command line and coordinator")
set(CPACK_RPM_JOBCTL_PACKAGE_DESCRIPTION "${jobctl_description}")
set(CPACK_RPM_JOBCTL_PACKAGE_REQUIRES_PRE shadow-utils)
set(CPACK_RPM_JOBCTL_USER_FILELIST
    "%config(noreplace) /etc/jobctl/coordinator.toml"
    "%config(noreplace) /etc/jobctl/jobctl.toml"
    "%attr(0644,root,root) ${JOBCTL_SYSTEMD_UNITDIR}/jobctl-coordinator.service"
    "%dir %attr(0700,jobctl,jobctl) /var/lib/jobctl")
set(CPACK_RPM_JOBCTL_PRE_INSTALL_SCRIPT_FILE "${pkgdir}/rpm/jobctl-pre.sh")
set(CPACK_RPM_JOBCTL_POST_INSTALL_SCRIPT_FILE "${pkgdir}/rpm/jobctl-post.sh")
set(CPACK_RPM_JOBCTL_PRE_UNINSTALL_SCRIPT_FILE "${pkgdir}/rpm/jobctl-preun.sh")
set(CPACK_RPM_JOBCTL_POST_UNINSTALL_SCRIPT_FILE "${pkgdir}/rpm/jobctl-postun.sh")
set(CPACK_RPM_AGENTD_PACKAGE_NAME agentd)
set(CPACK_RPM_AGENTD_PACKAGE_SUMMARY "Distributed crontab agent: runs jobctl jobs on this host")
set(CPACK_RPM_AGENTD_PACKAGE_DESCRIPTION "${agentd_description}")
set(CPACK_RPM_AGENTD_USER_FILELIST
    "%config(noreplace) %attr(0640,root,root) /etc/agentd/agentd.toml"
    "%attr(0644,root,root) ${JOBCTL_SYSTEMD_UNITDIR}/agentd.service"
    "%dir %attr(0700,root,root) /var/lib/agentd")
set(CPACK_RPM_AGENTD_POST_INSTALL_SCRIPT_FILE "${pkgdir}/rpm/agentd-post.sh")
set(CPACK_RPM_AGENTD_PRE_UNINSTALL_SCRIPT_FILE "${pkgdir}/rpm/agentd-preun.sh")
set(CPACK_RPM_AGENTD_POST_UNINSTALL_SCRIPT_FILE "${pkgdir}/rpm/agentd-postun.sh")

include(CPack)
