// Demo and test tooling: what HBase's Thrift1 API cannot do, through HBase's own Java Admin API.
//
// Run with the JDK's single-file launcher (JDK 11+), the HBase client classpath and the
// stack's conf dir (hbase-site.xml: where ZooKeeper is):
//   java -cp <conf dir>:<hbase jars>/* HBaseTableTool.java COMMAND ARGS...
// Commands (one line of output per fact, exit status 0 on success, 1 with a message on error):
//   create TABLE FAMILY KEEP_DELETED_CELLS(true|false) MAX_VERSIONS
//       creates TABLE with one family; prints "created TABLE"
//   describe TABLE
//       prints "family NAME versions=N ttl=S keep_deleted_cells=TRUE|FALSE|TTL" per family
//   major-compact TABLE TIMEOUT_S
//       flushes the memstores, requests a major compaction and waits (at most TIMEOUT_S) until
//       the master reports a major compaction newer than the request and no compaction runs;
//       prints "compacted TABLE"
//   raw-scan TABLE
//       every cell including delete markers and deleted cells (a raw scan, all versions):
//       "ROW FAMILY:QUALIFIER TIMESTAMP TYPE VALUE" (bytes printed with Bytes.toStringBinary)
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.KeepDeletedCells;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.CompactionState;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;

public class HBaseTableTool {
  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      fail("usage: create|describe|major-compact|raw-scan TABLE ...");
    }
    Configuration conf = HBaseConfiguration.create();
    try (Connection connection = ConnectionFactory.createConnection(conf);
        Admin admin = connection.getAdmin()) {
      TableName table = TableName.valueOf(args[1]);
      switch (args[0]) {
        case "create" -> create(admin, table, args);
        case "describe" -> describe(admin, table);
        case "major-compact" -> majorCompact(admin, table, args);
        case "raw-scan" -> rawScan(connection, table);
        default -> fail("unknown command " + args[0]);
      }
    }
  }

  static void fail(String message) {
    System.err.println("HBaseTableTool: " + message);
    System.exit(1);
  }

  static void create(Admin admin, TableName table, String[] args) throws Exception {
    if (args.length != 5) {
      fail("usage: create TABLE FAMILY KEEP_DELETED_CELLS(true|false) MAX_VERSIONS");
    }
    ColumnFamilyDescriptor family =
        ColumnFamilyDescriptorBuilder.newBuilder(Bytes.toBytes(args[2]))
            .setKeepDeletedCells(
                Boolean.parseBoolean(args[3]) ? KeepDeletedCells.TRUE : KeepDeletedCells.FALSE)
            .setMaxVersions(Integer.parseInt(args[4]))
            .build();
    admin.createTable(TableDescriptorBuilder.newBuilder(table).setColumnFamily(family).build());
    System.out.println("created " + table.getNameAsString());
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
}
