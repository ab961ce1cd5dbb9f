package dev.campaignengine.neo4j;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;

/**
 * Runs Neo4j Community embedded with Bolt on 127.0.0.1 only and auth disabled, for local runs and tests.
 *
 * <p>Arguments: {@code --data DIR --port N[,N...] [--pagecache 64m] [--tx-memory 512m] [--watch-stdin false]
 * [--settings "name=value name=value"]}; the heap is set by the caller with -Xmx. {@code --settings} adds or
 * overrides raw Neo4j settings (the test suite's query-cache policy). Several ports start as many
 * databases in this one JVM, the first in DIR and the k-th in DIR/instance-k, each on its own port and
 * page cache: the test suite's workers share one JIT's compiled Neo4j instead of compiling it once
 * each. Prints {@code NEO4J READY bolt://127.0.0.1:N} for each port once Bolt accepts queries. Shuts
 * down cleanly on SIGTERM and when stdin closes, so a crashed parent never leaves an orphan holding the
 * store lock.
 */
public final class Launcher {
    private Launcher() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = parse(args);
        Path data = Path.of(opts.getOrDefault("--data", ".local/neo4j")).toAbsolutePath();
        String[] ports = opts.getOrDefault("--port", "7687").split(",");
        List<DatabaseManagementService> services = new ArrayList<>();
        for (int i = 0; i < ports.length; i++) {
            Path home = i == 0 ? data : data.resolve("instance-" + i);
            services.add(start(home, Integer.parseInt(ports[i].trim()), opts));
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Thread shutdown = new Thread(() -> {
            services.parallelStream().forEach(DatabaseManagementService::shutdown);
            stopped.countDown();
        }, "neo4j-shutdown");
        Runtime.getRuntime().addShutdownHook(shutdown);

        for (int i = 0; i < ports.length; i++) {
            GraphDatabaseService db = services.get(i).database("neo4j");
            db.executeTransactionally("RETURN 1");
            System.out.println("NEO4J READY bolt://127.0.0.1:" + ports[i].trim());
        }
        System.out.flush();

        if ("false".equals(opts.get("--watch-stdin"))) {
            stopped.await(); // detached: only SIGTERM stops us
            return;
        }
        // Parent gone (stdin closed) -> exit, which runs the shutdown hook.
        while (System.in.read() != -1) {
            // discard anything written to stdin
        }
        System.exit(0);
    }

    private static DatabaseManagementService start(Path data, int port, Map<String, String> opts)
            throws Exception {
        Files.createDirectories(data);
        Map<String, String> config = new HashMap<>();
        config.put("server.bolt.enabled", "true");
        config.put("server.bolt.listen_address", "127.0.0.1:" + port);
        config.put("server.bolt.advertised_address", "127.0.0.1:" + port);
        config.put("server.default_listen_address", "127.0.0.1");
        config.put("dbms.security.auth_enabled", "false");
        config.put("server.memory.pagecache.size", opts.getOrDefault("--pagecache", "64m"));
        config.put("dbms.memory.transaction.total.max", opts.getOrDefault("--tx-memory", "512m"));
        config.put("dbms.usage_report.enabled", "false");
        config.put("server.http.enabled", "false");
        config.put("server.https.enabled", "false");
        config.put("db.tx_log.rotation.retention_policy", "2 files");
        for (String setting : opts.getOrDefault("--settings", "").trim().split("\\s+")) {
            if (setting.isEmpty()) {
                continue;
            }
            int equals = setting.indexOf('=');
            if (equals <= 0) {
                throw new IllegalArgumentException("a setting is name=value: " + setting);
            }
            config.put(setting.substring(0, equals), setting.substring(equals + 1));
        }

        // Raw setting names through a properties file: the typed Setting constants move between releases.
        Path conf = data.resolve("neo4j.conf");
        StringBuilder lines = new StringBuilder();
        config.forEach((key, value) -> lines.append(key).append('=').append(value).append('\n'));
        Files.writeString(conf, lines);
        return new DatabaseManagementServiceBuilder(data).loadPropertiesFromFile(conf).build();
    }

    private static Map<String, String> parse(String[] args) {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument: " + args[i]);
            }
            opts.put(args[i], args[i + 1]);
        }
        return opts;
    }
}
