// Demo and test tooling: what HBase's Thrift1 API cannot do, through HBase's own Java Admin API.
//
// Run with the JDK's single-file launcher (JDK 11+), the HBase client classpath and the
// stack's conf dir (hbase-site.xml: where ZooKeeper is):
//   java -cp <conf dir>:<hbase jars>/* HBaseTableTool.java COMMAND ARGS...
// Commands (one line of output per fact, exit status 0 on success, 1 with a message on error):
//   create TABLE FAMILY KEEP_DELETED_CELLS(true|false) MAX_VERSIONS [SPLIT_KEY...]
//       creates TABLE with one family, pre-split at the SPLIT_KEYs (Bytes.toBytesBinary form;
//       N keys: N+1 regions, assigned round-robin over the region servers); prints "created TABLE"
//   describe TABLE
//       prints "family NAME versions=N ttl=S keep_deleted_cells=TRUE|FALSE|TTL" per family
//   major-compact TABLE TIMEOUT_S
//       flushes the memstores, requests a major compaction and waits (at most TIMEOUT_S) until
//       the master reports a major compaction newer than the request and no compaction runs;
//       prints "compacted TABLE"
//   raw-scan TABLE
//       every cell including delete markers and deleted cells (a raw scan, all versions):
//       "ROW FAMILY:QUALIFIER TIMESTAMP TYPE VALUE" (bytes printed with Bytes.toStringBinary)
//   servers
//       the live region servers: "server NAME" (NAME = host,port,startcode) per server
//   regions TABLE
//       one line per region in key order, tab-separated: "region", the encoded region name,
//       start key, end key (Bytes.toStringBinary; empty at the table's ends), the server
//       hosting it (read fresh from hbase:meta)
//   split TABLE ROW TIMEOUT_S
//       splits the region holding ROW at ROW and waits (at most TIMEOUT_S) until both
//       daughters are open on their servers; prints "split PARENT into LEFT RIGHT"
//   move TABLE REGION SERVER|any TIMEOUT_S
//       moves the region of TABLE (encoded name) to SERVER (host,port,startcode) or, with "any", to
//       a server the master picks, and waits (at most TIMEOUT_S) until it is open there;
//       prints "moved REGION to SERVER"
// Keys and rows on the command line are in Bytes.toBytesBinary form ("user-0020", "\x00").
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.KeepDeletedCells;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.CompactionState;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;

public class HBaseTableTool {
  public static void main(String[] args) throws Exception {
    if (args.length < 1 || (args.length < 2 && !args[0].equals("servers"))) {
      fail("usage: create|describe|major-compact|raw-scan|regions|split|move TABLE ... | servers");
    }
    Configuration conf = HBaseConfiguration.create();
    if (args[0].equals("servers")) {
      // a health check: fail within seconds while the master is still starting
      conf.setInt("hbase.client.retries.number", 2);
    }
    try (Connection connection = ConnectionFactory.createConnection(conf);
        Admin admin = connection.getAdmin()) {
      if (args[0].equals("servers")) {
        servers(admin);
        return;
      }
      TableName table = TableName.valueOf(args[1]);
      switch (args[0]) {
        case "create" -> create(admin, table, args);
        case "describe" -> describe(admin, table);
        case "major-compact" -> majorCompact(admin, table, args);
        case "raw-scan" -> rawScan(connection, table);
        case "regions" -> regions(connection, table);
        case "split" -> split(connection, admin, table, args);
        case "move" -> move(connection, admin, table, args);
        default -> fail("unknown command " + args[0]);
      }
    }
  }

  static void fail(String message) {
    System.err.println("HBaseTableTool: " + message);
    System.exit(1);
  }

  static void create(Admin admin, TableName table, String[] args) throws Exception {
    if (args.length < 5) {
      fail("usage: create TABLE FAMILY KEEP_DELETED_CELLS(true|false) MAX_VERSIONS [SPLIT_KEY...]");
    }
    ColumnFamilyDescriptor family =
        ColumnFamilyDescriptorBuilder.newBuilder(Bytes.toBytes(args[2]))
            .setKeepDeletedCells(
                Boolean.parseBoolean(args[3]) ? KeepDeletedCells.TRUE : KeepDeletedCells.FALSE)
            .setMaxVersions(Integer.parseInt(args[4]))
            .build();
    byte[][] splitKeys =
        Arrays.stream(args, 5, args.length).map(Bytes::toBytesBinary).toArray(byte[][]::new);
    var descriptor = TableDescriptorBuilder.newBuilder(table).setColumnFamily(family).build();
    if (splitKeys.length == 0) {
      admin.createTable(descriptor);
    } else {
      admin.createTable(descriptor, splitKeys);
    }
    System.out.println("created " + table.getNameAsString());
    describe(admin, table); // the caller gets the settings without a second JVM
  }

  static void describe(Admin admin, TableName table) throws Exception {
    for (ColumnFamilyDescriptor family : admin.getDescriptor(table).getColumnFamilies()) {
      System.out.println(
          "family " + family.getNameAsString()
              + " versions=" + family.getMaxVersions()
              + " ttl=" + family.getTimeToLive()
              + " keep_deleted_cells=" + family.getKeepDeletedCells());
    }
  }

  static void majorCompact(Admin admin, TableName table, String[] args) throws Exception {
    if (args.length != 3) {
      fail("usage: major-compact TABLE TIMEOUT_S");
    }
    long deadline = System.currentTimeMillis() + 1000L * Long.parseLong(args[2]);
    long before = admin.getLastMajorCompactionTimestamp(table);
    admin.flush(table);
    admin.majorCompact(table);
    while (true) {
      long last = admin.getLastMajorCompactionTimestamp(table);
      CompactionState state = admin.getCompactionState(table);
      if (last > before && state == CompactionState.NONE) {
        System.out.println("compacted " + table.getNameAsString());
        return;
      }
      if (System.currentTimeMillis() > deadline) {
        fail("major compaction of " + table + " not finished within " + args[2]
            + " s (last major compaction " + last + ", before the request " + before
            + ", state " + state + ")");
      }
      Thread.sleep(200);
    }
  }

  static void rawScan(Connection connection, TableName table) throws Exception {
    Scan scan = new Scan().setRaw(true).readAllVersions();
    try (Table t = connection.getTable(table); ResultScanner scanner = t.getScanner(scan)) {
      for (Result result : scanner) {
        List<Cell> cells = result.listCells();
        for (Cell cell : cells) {
          System.out.println(
              Bytes.toStringBinary(CellUtil.cloneRow(cell)) + " "
                  + Bytes.toStringBinary(CellUtil.cloneFamily(cell)) + ":"
                  + Bytes.toStringBinary(CellUtil.cloneQualifier(cell)) + " "
                  + cell.getTimestamp() + " " + cell.getType() + " "
                  + Bytes.toStringBinary(CellUtil.cloneValue(cell)));
        }
      }
    }
  }

  static void servers(Admin admin) throws Exception {
    for (ServerName server : admin.getRegionServers()) {
      System.out.println("server " + server.getServerName());
    }
  }

  /** The table's regions in key order with their servers, read fresh from hbase:meta. */
  static List<HRegionLocation> locations(Connection connection, TableName table) throws Exception {
    try (RegionLocator locator = connection.getRegionLocator(table)) {
      locator.clearRegionLocationCache();
      return locator.getAllRegionLocations();
    }
  }

  static void regions(Connection connection, TableName table) throws Exception {
    for (HRegionLocation location : locations(connection, table)) {
      RegionInfo region = location.getRegion();
      System.out.println(String.join("\t", "region", region.getEncodedName(),
          Bytes.toStringBinary(region.getStartKey()), Bytes.toStringBinary(region.getEndKey()),
          location.getServerName() == null ? "-" : location.getServerName().getServerName()));
    }
  }

  /** True when the region is open on the server (the server itself says so). */
  static boolean openOn(Admin admin, ServerName server, String encodedName) throws Exception {
    return server != null
        && admin.getRegions(server).stream().anyMatch(r -> r.getEncodedName().equals(encodedName));
  }

  static void split(Connection connection, Admin admin, TableName table, String[] args)
      throws Exception {
    if (args.length != 4) {
      fail("usage: split TABLE ROW TIMEOUT_S");
    }
    byte[] row = Bytes.toBytesBinary(args[2]);
    long deadline = System.currentTimeMillis() + 1000L * Long.parseLong(args[3]);
    RegionInfo parent = null;
    for (HRegionLocation location : locations(connection, table)) {
      if (location.getRegion().containsRow(row)) {
        parent = location.getRegion();
      }
    }
    if (parent == null || Bytes.equals(parent.getStartKey(), row)) {
      fail("no region of " + table + " can be split at " + args[2]);
    }
    admin.splitRegionAsync(parent.getRegionName(), row)
        .get(Math.max(1, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
    while (true) {
      List<String> daughters = new ArrayList<>();
      for (HRegionLocation location : locations(connection, table)) {
        RegionInfo region = location.getRegion();
        boolean left = Bytes.equals(region.getStartKey(), parent.getStartKey())
            && Bytes.equals(region.getEndKey(), row);
        boolean right = Bytes.equals(region.getStartKey(), row)
            && Bytes.equals(region.getEndKey(), parent.getEndKey());
        if ((left || right) && openOn(admin, location.getServerName(), region.getEncodedName())) {
          daughters.add(region.getEncodedName());
        }
      }
      if (daughters.size() == 2) {
        System.out.println("split " + parent.getEncodedName() + " into " + daughters.get(0) + " "
            + daughters.get(1));
        return;
      }
      if (System.currentTimeMillis() > deadline) {
        fail("daughters of " + parent.getEncodedName() + " not open within " + args[3] + " s");
      }
      Thread.sleep(200);
    }
  }

  static void move(Connection connection, Admin admin, TableName table, String[] args)
      throws Exception {
    if (args.length != 5) {
      fail("usage: move TABLE REGION SERVER|any TIMEOUT_S");
    }
    String encoded = args[2];
    long deadline = System.currentTimeMillis() + 1000L * Long.parseLong(args[4]);
    ServerName source = null;
    for (HRegionLocation location : locations(connection, table)) {
      if (location.getRegion().getEncodedName().equals(encoded)) {
        source = location.getServerName();
      }
    }
    if (source == null) {
      fail("no region " + encoded + " of " + table + " is assigned");
    }
    ServerName target = args[3].equals("any") ? null : ServerName.valueOf(args[3]);
    if (target == null) {
      admin.move(Bytes.toBytes(encoded));
    } else {
      admin.move(Bytes.toBytes(encoded), target);
    }
    while (true) {
      for (HRegionLocation location : locations(connection, table)) {
        ServerName now = location.getServerName();
        if (location.getRegion().getEncodedName().equals(encoded)
            && (target == null ? !source.equals(now) : target.equals(now))
            && openOn(admin, now, encoded)) {
          System.out.println("moved " + encoded + " to " + now.getServerName());
          return;
        }
      }
      if (System.currentTimeMillis() > deadline) {
        fail("region " + encoded + " not open on " + args[3] + " within " + args[4] + " s");
      }
      Thread.sleep(200);
    }
  }
}
