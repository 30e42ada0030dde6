#include "config/crontab_import.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/crontab_line.h"
#include "config/job_file.h"
#include "model/schedule.h"
#include "model/time_format.h"

namespace jobctl {
namespace {

std::string Text(std::string_view raw) {
  if (!raw.empty() && raw.front() == '\n') raw.remove_prefix(1);
  return std::string(raw);
}

// A user crontab with the usual settings, names in ranges, '%', @reboot and a macro.
const std::string kUserCrontab = Text(R"(
# Edit this file to introduce tasks to be run by cron.
# m h  dom mon dow   command
SHELL=/bin/bash
PATH=/usr/local/bin:/usr/bin:/bin
MAILTO=ops@example.com
CRON_TZ=Europe/Berlin

# nightly backup, logs kept a week
30 2 * * * /usr/local/bin/backup.sh --full >> /var/log/backup.log 2>&1
*/15 9-17 * * mon-fri cd /srv/app && ./bin/poll --quiet
0 8 1 jan-mar,oct * /usr/bin/report
5 4 * * sun	date +\%Y-\%m-\%d >> /tmp/dates
0 6 * * * mail -s "daily" root%Hello,%%it's cron\%s mail
@reboot /usr/local/bin/start-agent
@weekly /usr/local/bin/backup.sh --prune
)");

// Debian's /etc/crontab, tabs and all.
const std::string kSystemCrontab = Text(R"(
# /etc/crontab: system-wide crontab
# Unlike any other crontab you don't have to run the `crontab'
# command to install the new version when you edit this file
# and files in /etc/cron.d. These files also have username fields,
# that none of the other crontabs do.

SHELL=/bin/sh
# You can also override PATH, but by default, newer versions inherit it from the environment
PATH=/usr/local/sbin:/usr/local/bin:/sbin:/bin:/usr/sbin:/usr/bin

# Example of job definition:
# .---------------- minute (0 - 59)
# |  .------------- hour (0 - 23)
# |  |  .---------- day of month (1 - 31)
# |  |  |  .------- month (1 - 12) OR jan,feb,mar,apr ...
# |  |  |  |  .---- day of week (0 - 6) (Sunday=0 or 7) OR sun,mon,tue,wed,thu,fri,sat
# |  |  |  |  |
# *  *  *  *  * user-name command to be executed
17 *	* * *	root    cd / && run-parts --report /etc/cron.hourly
25 6	* * *	root	test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.daily; }
47 6	* * 7	root	test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.weekly; }
52 6	1 * *	root	test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.monthly; }
#
)");

// An /etc/cron.d file whose zone changes halfway, with a user column.
const std::string kCronD = Text(R"(
SHELL=/bin/sh
PATH=/usr/local/sbin:/usr/local/bin:/sbin:/bin:/usr/sbin:/usr/bin
0 */12 * * * root test -x /usr/bin/certbot && perl -e 'sleep int(rand(43200))' && certbot -q renew
CRON_TZ=America/New_York
30 2 * * 1-5 www-data /usr/bin/php /var/www/cron.php
LANG=C.UTF-8
0 0 1,15 * * www-data /usr/bin/php /var/www/cron.php --monthly
)");

bool IsTestUser(std::string_view name) {
  static const std::set<std::string, std::less<>> kUsers = {"root", "www-data", "backup"};
  return kUsers.count(name) != 0;
}

CrontabImport Import(std::string_view text, CrontabImportOptions options = {}) {
  if (!options.is_user) options.is_user = IsTestUser;
  return ImportCrontab(text, options);
}

JobFile ParseOk(const CrontabImport& imported) {
  JobFileResult r = ParseJobFile(imported.toml, "imported.toml");
  EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors[0].ToString()) << "\n" << imported.toml;
  return r.file;
}

// The next fires of `a` and `b` from early 2024 through both DST changes of the year.
void ExpectSameFires(const Job& job, const std::string& crontab_schedule) {
  Result<Schedule> ours = Schedule::Parse({.expr = job.schedule,
                                           .dialect = job.dialect,
                                           .timezone = job.timezone,
                                           .hash_key = job.name});
  Result<Schedule> cron = Schedule::Parse({.expr = crontab_schedule});
  ASSERT_TRUE(ours.ok()) << ours.status().message();
  ASSERT_TRUE(cron.ok()) << cron.status().message();
  for (std::string from : {"2024-01-01T00:00:00Z", "2024-03-09T00:00:00Z", "2024-10-26T12:00:00Z",
                           "2024-11-02T12:00:00Z"}) {
    WallTime a = *ParseInstant(from), b = a;
    for (int i = 0; i < 60; ++i) {
      std::optional<WallTime> na = ours->Next(a), nb = cron->Next(b);
      ASSERT_TRUE(na && nb);
      ASSERT_EQ(FormatUtc(*na), FormatUtc(*nb)) << job.name << " vs \"" << crontab_schedule << "\"";
      a = *na;
      b = *nb;
    }
  }
}

TEST(CrontabImportTest, UserCrontabGivesAValidJobFile) {
  CrontabImport r = Import(kUserCrontab, {.source = "crontab.txt"});
  EXPECT_EQ(r.format, CrontabFormat::kUser);
  EXPECT_EQ(r.jobs, 6);
  JobFile file = ParseOk(r);
  std::vector<std::string> names;
  for (const Job& j : file.jobs) names.push_back(j.name);
  EXPECT_EQ(names, (std::vector<std::string>{"backup.sh", "poll", "report", "date", "mail",
                                             "backup.sh-2"}));
  for (const Job& j : file.jobs) {
    EXPECT_EQ(j.timezone, "Europe/Berlin");
    EXPECT_EQ(j.env.at("PATH"), "/usr/local/bin:/usr/bin:/bin");
    EXPECT_EQ(j.run_as, "");
    ASSERT_EQ(j.command.size(), 3u);  // SHELL=/bin/bash: bash -c
    EXPECT_EQ(j.command[0], "/bin/bash");
    EXPECT_EQ(j.command[1], "-c");
  }
  EXPECT_EQ(file.jobs[3].command[2], "date +%Y-%m-%d >> /tmp/dates");
}

TEST(CrontabImportTest, UserCrontabOutputReadsLikeTheCrontab) {
  CrontabImport r = Import(kUserCrontab, {.source = "crontab.txt"});
  EXPECT_EQ(r.toml.substr(0, r.toml.find("[[job]]")), Text(R"(
# Imported from crontab.txt by jobctl import-crontab (user crontab).

# Edit this file to introduce tasks to be run by cron.
# m h  dom mon dow   command

# SHELL=/bin/bash: the jobs below run their command with /bin/bash -c

# MAILTO=ops@example.com: the jobs below notify it when a run fails or recovers (notify in jobs.toml(5), sent by the coordinator's mailto_channel)

[defaults]
timezone = "Europe/Berlin"
env = { PATH = "/usr/local/bin:/usr/bin:/bin" }
notify = ["mailto:ops@example.com"]

# nightly backup, logs kept a week
)"));
  EXPECT_NE(r.toml.find("# not imported (line 14: @reboot has no equivalent in jobctl (nothing "
                        "runs at boot)): @reboot /usr/local/bin/start-agent\n"),
            std::string::npos)
      << r.toml;
}

TEST(CrontabImportTest, RebootIsAWarningWithItsLine) {
  CrontabImport r = Import(kUserCrontab);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0].line, 14);
  EXPECT_EQ(r.warnings[0].message,
            "@reboot has no equivalent in jobctl (nothing runs at boot); line skipped");
}

TEST(CrontabImportTest, SchedulesFireWhenCronWould) {
  JobFile file = ParseOk(Import(kUserCrontab));
  const std::vector<std::string> cron = {
      "CRON_TZ=Europe/Berlin 30 2 * * *",          "CRON_TZ=Europe/Berlin */15 9-17 * * mon-fri",
      "CRON_TZ=Europe/Berlin 0 8 1 jan-mar,oct *", "CRON_TZ=Europe/Berlin 5 4 * * sun",
      "CRON_TZ=Europe/Berlin 0 6 * * *",           "CRON_TZ=Europe/Berlin @weekly"};
  ASSERT_EQ(file.jobs.size(), cron.size());
  for (size_t i = 0; i < cron.size(); ++i) ExpectSameFires(file.jobs[i], cron[i]);
  EXPECT_EQ(file.jobs[0].schedule, "30 2 * * *");  // five fields stay five fields
  EXPECT_EQ(file.jobs[5].schedule, "@weekly");
}

TEST(CrontabImportTest, PercentBecomesStdinThroughPrintf) {
  JobFile file = ParseOk(Import(kUserCrontab));
  EXPECT_EQ(file.jobs[4].command[2],
            "printf '%s' 'Hello,\n\nit'\\''s cron%s mail\n' | mail -s \"daily\" root");
}

TEST(CrontabImportTest, SystemCrontabIsRecognisedByItsPath) {
  CrontabImport r = Import(kSystemCrontab, {.source = "/etc/crontab", .is_user = nullptr});
  EXPECT_EQ(r.format, CrontabFormat::kSystem);
  EXPECT_EQ(r.detected_because, "the file is /etc/crontab");
  JobFile file = ParseOk(r);
  ASSERT_EQ(file.jobs.size(), 4u);
  EXPECT_EQ(file.jobs[0].name, "cron.hourly");
  EXPECT_EQ(file.jobs[1].name, "cron.daily");
  EXPECT_EQ(file.jobs[3].name, "cron.monthly");
  EXPECT_EQ(file.jobs[0].run_as, "root");
  EXPECT_EQ(file.jobs[0].shell, "cd / && run-parts --report /etc/cron.hourly");
  EXPECT_EQ(file.jobs[2].schedule, "47 6 * * 7");
  EXPECT_EQ(file.jobs[2].timezone, "");
  const std::vector<std::string> cron = {"17 * * * *", "25 6 * * *", "47 6 * * 7", "52 6 1 * *"};
  for (size_t i = 0; i < cron.size(); ++i) ExpectSameFires(file.jobs[i], cron[i]);
}

TEST(CrontabImportTest, SystemCrontabIsRecognisedByItsUserColumn) {
  CrontabImport r = Import(kSystemCrontab, {.source = "crontab-copy"});
  EXPECT_EQ(r.format, CrontabFormat::kSystem);
  EXPECT_EQ(r.detected_because, "every job line names a user on this host before its command");
  // One line whose sixth field is not a user makes it a user crontab.
  CrontabImport mixed = Import(kSystemCrontab + "0 1 * * * /usr/bin/true\n");
  EXPECT_EQ(mixed.format, CrontabFormat::kUser);
  // A command that is only a user name is not a user column.
  EXPECT_EQ(Import("0 1 * * * backup\n").format, CrontabFormat::kUser);
  // Without a way to look users up, only --system makes it a system crontab.
  EXPECT_EQ(Import(kSystemCrontab, {.is_user = [](std::string_view) { return false; }}).format,
            CrontabFormat::kUser);
  EXPECT_EQ(Import(kSystemCrontab, {.format = CrontabFormat::kSystem}).format,
            CrontabFormat::kSystem);
}

TEST(CrontabImportTest, ZoneChangesHalfwayStayPerJob) {
  CrontabImport r = Import(kCronD, {.source = "/etc/cron.d/web"});
  JobFile file = ParseOk(r);
  ASSERT_EQ(file.jobs.size(), 3u);
  EXPECT_EQ(file.jobs[0].name, "web-certbot");
  EXPECT_EQ(file.jobs[1].name, "web-cron.php");
  EXPECT_EQ(file.jobs[2].name, "web-cron.php-2");
  EXPECT_EQ(file.jobs[0].timezone, "");
  EXPECT_EQ(file.jobs[1].timezone, "America/New_York");
  EXPECT_EQ(file.jobs[1].run_as, "www-data");
  EXPECT_EQ(file.jobs[1].env.count("LANG"), 0u);
  EXPECT_EQ(file.jobs[2].env.at("LANG"), "C.UTF-8");
  EXPECT_EQ(file.jobs[2].env.at("PATH"),
            "/usr/local/sbin:/usr/local/bin:/sbin:/bin:/usr/sbin:/usr/bin");
  EXPECT_NE(r.toml.find("[defaults]\nenv = { PATH = "), std::string::npos) << r.toml;
  ExpectSameFires(file.jobs[0], "0 */12 * * *");
  ExpectSameFires(file.jobs[1], "CRON_TZ=America/New_York 30 2 * * 1-5");
  ExpectSameFires(file.jobs[2], "CRON_TZ=America/New_York 0 0 1,15 * *");
}

TEST(CrontabImportTest, HostZoneAppliesToLinesWithoutCronTz) {
  JobFile file = ParseOk(Import("0 9 * * * /bin/true\n", {.timezone = "Asia/Tokyo"}));
  ASSERT_EQ(file.jobs.size(), 1u);
  EXPECT_EQ(file.jobs[0].timezone, "Asia/Tokyo");
  ExpectSameFires(file.jobs[0], "CRON_TZ=Asia/Tokyo 0 9 * * *");
}

TEST(CrontabImportTest, EachJobModeWritesNoDefaultsAndAlwaysAZone) {
  CrontabImport r = Import(
      kUserCrontab, {.shared = SharedSettings::kEachJob, .taken_names = {"backup.sh", "poll"}});
  EXPECT_EQ(r.toml.find("[defaults]"), std::string::npos);
  JobFile file = ParseOk(r);
  EXPECT_EQ(file.jobs[0].name, "backup.sh-2");
  EXPECT_EQ(file.jobs[1].name, "poll-2");
  EXPECT_EQ(file.jobs[0].timezone, "Europe/Berlin");
  JobFile utc = ParseOk(Import("@hourly /bin/true\n", {.shared = SharedSettings::kEachJob}));
  EXPECT_EQ(utc.jobs[0].timezone, "UTC");
}

TEST(CrontabImportTest, BadLinesAreSkippedWithWarningsAndKeptAsComments) {
  CrontabImport r = Import(Text(R"(
0 25 * * * /bin/hour-25
* * * /bin/short
@fortnightly /bin/never
JOB_NAME=x
0 1 * * * /bin/fine
)"));
  EXPECT_EQ(r.jobs, 1);
  ASSERT_EQ(r.warnings.size(), 4u);
  EXPECT_EQ(r.warnings[0].line, 1);
  EXPECT_NE(r.warnings[0].message.find("25 is out of range 0-23"), std::string::npos);
  EXPECT_EQ(r.warnings[1].line, 2);
  EXPECT_EQ(r.warnings[2].line, 3);
  EXPECT_EQ(r.warnings[3].message, "JOB_NAME: reserved for the agent; not imported");
  ParseOk(r);
  EXPECT_NE(r.toml.find("# not imported (line 2: expected 5 schedule fields and a command): * * "
                        "* /bin/short\n"),
            std::string::npos);
}

TEST(CrontabImportTest, NothingImportableGivesNoText) {
  CrontabImport r = Import("# only\n@reboot /bin/x\nMAILTO=root\n");
  EXPECT_EQ(r.jobs, 0);
  EXPECT_EQ(r.toml, "");
  EXPECT_EQ(r.warnings.size(), 1u);
}

TEST(CrontabImportTest, MailtoBecomesNotifyForTheJobsBelowIt) {
  CrontabImport r = Import(
      "0 1 * * * /bin/a\n"
      "MAILTO=ops@example.com, dba@example.com\n"
      "0 2 * * * /bin/b\n"
      "MAILTO=root\n"
      "0 3 * * * /bin/c\n"
      "MAILTO=<bad>@z\n"
      "0 4 * * * /bin/d\n"
      "MAILTO=\"\"\n"
      "0 5 * * * /bin/e\n");
  JobFile file = ParseOk(r);
  ASSERT_EQ(file.jobs.size(), 5u);
  EXPECT_TRUE(file.jobs[0].notify.to.empty());
  EXPECT_EQ(file.jobs[1].notify.to,
            (std::vector<std::string>{"mailto:ops@example.com", "mailto:dba@example.com"}));
  EXPECT_EQ(file.jobs[1].notify.on, kDefaultNotifyOn);
  EXPECT_TRUE(file.jobs[2].notify.to.empty()) << "a local user has no address";
  EXPECT_TRUE(file.jobs[3].notify.to.empty());
  EXPECT_TRUE(file.jobs[4].notify.to.empty());
  EXPECT_NE(r.toml.find("# MAILTO: root is a local user; not imported"), std::string::npos)
      << r.toml;
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0].line, 6);
}

TEST(CrontabImportTest, CrlfCrontabsAndDashPrefix) {
  JobFile file = ParseOk(Import("A=1\r\n-0 1 * * * /bin/echo hi\r\n"));
  ASSERT_EQ(file.jobs.size(), 1u);
  EXPECT_EQ(file.jobs[0].shell, "/bin/echo hi");
  EXPECT_EQ(file.jobs[0].env.at("A"), "1");
}

TEST(CrontabLineTest, VariablesFollowCronieQuotingRules) {
  CrontabLine l = ParseCrontabLine("  MAILTO = \"a b\"  ", CrontabColumns::kUser);
  EXPECT_EQ(l.kind, CrontabLine::Kind::kVariable);
  EXPECT_EQ(l.name, "MAILTO");
  EXPECT_EQ(l.value, "a b");
  l = ParseCrontabLine("PATH=/bin:/usr/bin   ", CrontabColumns::kUser);
  EXPECT_EQ(l.value, "/bin:/usr/bin");
  l = ParseCrontabLine("0 * * * * X=1 cmd", CrontabColumns::kUser);
  EXPECT_EQ(l.kind, CrontabLine::Kind::kJob);
  EXPECT_EQ(l.command, "X=1 cmd");
}

TEST(CrontabLineTest, PercentSplitsLikeCron) {
  CronCommand c = SplitCronCommand("cmd");
  EXPECT_EQ(c.command, "cmd");
  EXPECT_FALSE(c.input);
  c = SplitCronCommand("date +\\%s\\x");
  EXPECT_EQ(c.command, "date +%s\\x");
  EXPECT_FALSE(c.input);
  c = SplitCronCommand("cat%a%b\\%c");
  EXPECT_EQ(c.command, "cat");
  EXPECT_EQ(*c.input, "a\nb%c\n");
  c = SplitCronCommand("cat%line%");
  EXPECT_EQ(*c.input, "line\n");  // no second newline
  c = SplitCronCommand("cat\\\\%x");
  EXPECT_EQ(c.command, "cat\\\\");
  EXPECT_EQ(*c.input, "x\n");
  EXPECT_FALSE(SplitCronCommand("cat%").input);
}

// /etc/cron.d files as Debian's packages install them (bookworm), tabs and all.
struct CronDFile {
  const char* path;
  std::string text;
};
const CronDFile kDebianCronD[] = {
    {"/etc/cron.d/certbot", Text(R"(
# /etc/cron.d/certbot: crontab entries for the certbot package
#
# Upstream recommends attempting renewal twice a day
#
# Eventually, this will be an opportunity to validate certificates
# haven't been revoked, etc.  Renewal will only occur if expiration
# is within 30 days.
#
# Important Note!  This cronjob will NOT be executed if you are
# running systemd as your init system.  If you are running systemd,
# the cronjob.timer function takes precedence over this cronjob.  For
# more details, see the systemd.timer manpage, or use systemctl show
# certbot.timer.
SHELL=/bin/sh
PATH=/usr/local/sbin:/usr/local/bin:/sbin:/bin:/usr/sbin:/usr/bin

0 */12 * * * root test -x /usr/bin/certbot -a \! -d /run/systemd/system && perl -e 'sleep int(rand(43200))' && certbot -q renew --no-random-sleep-on-renew
)")},
    {"/etc/cron.d/php", Text(R"(
# /etc/cron.d/php@PHP_VERSION@: crontab fragment for PHP
#  This purges session files in session.save_path older than X,
#  where X is defined in seconds as the largest value of
#  session.gc_maxlifetime from all your SAPI php.ini files
#  or 24 minutes if not defined.  The script triggers only
#  when session.save_handler=files.
#
#  WARNING: The scripts tries hard to honour all relevant
#  session PHP options, but if you do something unusual
#  you have to disable this script and take care of your
#  sessions yourself.

# Look for and purge old sessions every 30 minutes
09,39 *     * * *     root   [ -x /usr/lib/php/sessionclean ] && if [ ! -d /run/systemd/system ]; then /usr/lib/php/sessionclean; fi
)")},
    {"/etc/cron.d/sysstat", Text(R"(
# The first element of the path is a directory where the debian-sa1
# script is located
PATH=/usr/lib/sysstat:/usr/sbin:/usr/sbin:/usr/bin:/sbin:/bin

# Activity reports every 10 minutes everyday
5-55/10 * * * * root command -v debian-sa1 > /dev/null && debian-sa1 1 1

# Additional run at 23:59 to rotate the statistics file
59 23 * * * root command -v debian-sa1 > /dev/null && debian-sa1 60 2
)")},
    {"/etc/cron.d/e2scrub_all", Text(R"(
30 3 * * 0 root test -e /run/systemd/system || SERVICE_MODE=1 /usr/lib/x86_64-linux-gnu/e2fsprogs/e2scrub_all_cron
10 3 * * * root test -e /run/systemd/system || SERVICE_MODE=1 /sbin/e2scrub_all -A -r
)")},
    {"/etc/cron.d/anacron", Text(R"(
# /etc/cron.d/anacron: crontab entries for the anacron package

SHELL=/bin/sh
PATH=/usr/local/sbin:/usr/local/bin:/sbin:/bin:/usr/sbin:/usr/bin

#30 7-23 * * *   root	[ -x /etc/init.d/anacron ] && if [ ! -d /run/systemd/system ]; then /usr/sbin/invoke-rc.d anacron start >/dev/null; fi
30 7-23 * * *   root	[ -x /etc/init.d/anacron ] && if [ ! -d /run/systemd/system ]; then /usr/sbin/invoke-rc.d anacron start >/dev/null; fi
)")},
};

std::vector<std::string> NamesOf(const CrontabImport& imported) {
  std::vector<std::string> names;
  for (const Job& j : ParseOk(imported).jobs) names.push_back(j.name);
  return names;
}

// Issue 19: these imported as "perl", "if", "command", "command-2", "if".
TEST(CrontabImportTest, Issue19_DebianCronDJobsAreNamedAfterTheFileAndWhatTheyRun) {
  const std::vector<std::vector<std::string>> want = {
      {"certbot"},
      {"php-sessionclean"},
      {"sysstat-debian-sa1", "sysstat-debian-sa1-2"},
      {"e2scrub_all_cron", "e2scrub_all"},
      {"anacron"},
  };
  ASSERT_EQ(std::size(kDebianCronD), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const CronDFile& f = kDebianCronD[i];
    CrontabImport r = Import(f.text, {.source = f.path});
    EXPECT_EQ(r.format, CrontabFormat::kSystem) << f.path;
    EXPECT_TRUE(r.warnings.empty()) << f.path << ": " << r.warnings[0].message;
    EXPECT_EQ(NamesOf(r), want[i]) << f.path;
    // Stable: the same input gives the same names.
    EXPECT_EQ(NamesOf(Import(f.text, {.source = f.path})), want[i]) << f.path;
  }
}

TEST(CrontabImportTest, CronDFilesImportedIntoOneFileKeepNamesUnique) {
  std::vector<std::string> taken;
  for (int round = 0; round < 2; ++round) {
    for (const CronDFile& f : kDebianCronD) {
      CrontabImport r = Import(
          f.text, {.source = f.path, .shared = SharedSettings::kEachJob, .taken_names = taken});
      for (const std::string& name : NamesOf(r)) taken.push_back(name);
    }
  }
  EXPECT_EQ(taken, (std::vector<std::string>{
                       "certbot", "php-sessionclean", "sysstat-debian-sa1", "sysstat-debian-sa1-2",
                       "e2scrub_all_cron", "e2scrub_all", "anacron", "certbot-2",
                       "php-sessionclean-2", "sysstat-debian-sa1-3", "sysstat-debian-sa1-4",
                       "e2scrub_all_cron-2", "e2scrub_all-2", "anacron-2"}));
}

TEST(CrontabImportTest, OnlyFilesInACronDDirectoryPrefixTheirName) {
  const std::string line = "0 1 * * * root [ -x /usr/bin/x ] && /usr/bin/report\n";
  EXPECT_EQ(NamesOf(Import(line, {.source = "/etc/cron.d/acme"})),
            (std::vector<std::string>{"acme-report"}));
  EXPECT_EQ(NamesOf(Import(line, {.source = "/srv/backup/etc/cron.d/Acme_Tools"})),
            (std::vector<std::string>{"acme_tools-report"}));
  EXPECT_EQ(NamesOf(Import(line, {.source = "/etc/crontab"})),
            (std::vector<std::string>{"report"}));
  EXPECT_EQ(NamesOf(Import(line, {.source = "/home/me/acme", .format = CrontabFormat::kSystem})),
            (std::vector<std::string>{"report"}));
  EXPECT_EQ(
      NamesOf(Import(line, {.source = "/etc/not-cron.d/acme", .format = CrontabFormat::kSystem})),
      (std::vector<std::string>{"report"}));
}

// Issue 19: a user crontab imported with --system gave run_as = "/usr/lib/sysstat/sa1".
TEST(CrontabImportTest, Issue19_SystemFormatSkipsLinesWhoseUserColumnIsNoUserName) {
  CrontabImport r = Import("*/10 * * * * /usr/lib/sysstat/sa1 1 1\n0 1 * * * backup /bin/true\n",
                           {.format = CrontabFormat::kSystem});
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0].line, 1);
  EXPECT_EQ(r.warnings[0].message,
            "the user column \"/usr/lib/sysstat/sa1\" is not a user name (is this a user "
            "crontab? then import it with --user); line skipped");
  JobFile file = ParseOk(r);
  ASSERT_EQ(file.jobs.size(), 1u);
  EXPECT_EQ(file.jobs[0].run_as, "backup");
}

TEST(CrontabImportTest, NamesSkipShellKeywordsTestsAndPreludes) {
  EXPECT_EQ(JobNameForCommand("if [ -x /usr/bin/x ]; then /usr/bin/x --go; fi"), "x");
  EXPECT_EQ(JobNameForCommand("if test -f /etc/x; then cleanup; else :; fi"), "cleanup");
  EXPECT_EQ(JobNameForCommand("[ -x /a ] && if [ ! -d /run ]; then /usr/lib/a/b; fi"), "b");
  EXPECT_EQ(JobNameForCommand("command -v debian-sa1 > /dev/null && debian-sa1 1 1"), "debian-sa1");
  EXPECT_EQ(JobNameForCommand("command -v foo >/dev/null 2>&1 || exit 0; foo --run"), "foo");
  EXPECT_EQ(JobNameForCommand("command rsync -a /a /b"), "rsync");
  EXPECT_EQ(JobNameForCommand("test -x /x -a \\! -d /run && perl -e 'sleep int(rand(9))' && "
                              "certbot -q renew"),
            "certbot");
  EXPECT_EQ(JobNameForCommand("sleep $((RANDOM \\% 60)); /usr/bin/fetch-mail"), "fetch-mail");
  EXPECT_EQ(JobNameForCommand("A=1 B=\"x y\" /opt/bin/sync"), "sync");
  EXPECT_EQ(JobNameForCommand("cd /srv/app && ./manage"), "manage");
  EXPECT_EQ(JobNameForCommand("! /usr/bin/check || /usr/bin/alert"), "check");
  EXPECT_EQ(JobNameForCommand(">/dev/null 2>&1 /usr/bin/quiet"), "quiet");
  EXPECT_EQ(JobNameForCommand("for d in /srv/*; do /usr/bin/prune \"$d\"; done"), "prune");
  EXPECT_EQ(JobNameForCommand("/bin/sh -c 'cd /srv && exec ./nightly'"), "nightly");
  EXPECT_EQ(JobNameForCommand("perl -e 'print 1'"), "perl");
  EXPECT_EQ(JobNameForCommand("/usr/sbin/invoke-rc.d anacron start >/dev/null"), "anacron");
  EXPECT_EQ(JobNameForCommand("systemctl --quiet start logrotate.service"), "logrotate.service");
  EXPECT_EQ(JobNameForCommand("service nginx reload"), "nginx");
  EXPECT_EQ(JobNameForCommand("if"), "job");
}

TEST(CrontabImportTest, NamesComeFromTheProgram) {
  EXPECT_EQ(JobNameForCommand("/usr/local/bin/Backup_DB.sh --full"), "backup_db.sh");
  EXPECT_EQ(JobNameForCommand("cd /srv && FOO=1 nice -n 10 ionice -c3 ./sync-all"), "sync-all");
  EXPECT_EQ(JobNameForCommand("/usr/bin/flock -n /tmp/x.lock /opt/bin/rotate"), "rotate");
  EXPECT_EQ(JobNameForCommand("python3 -u /opt/app/manage.py clearsessions"), "manage.py");
  EXPECT_EQ(JobNameForCommand("\"/opt/My App/run me\""), "run-me");
  EXPECT_EQ(JobNameForCommand("[ -x /x ] && /x"), "x");
  EXPECT_EQ(JobNameForCommand("%%%"), "job");
}

}  // namespace
}  // namespace jobctl
