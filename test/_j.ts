import { z } from "zod";
import { clusterSchema } from "../components/spec";
const j = z.toJSONSchema(clusterSchema, { io: "input", unrepresentable: "any" }) as any;
console.log(JSON.stringify(j.properties.aws.properties.network, null, 1).slice(0, 1500));
console.log(JSON.stringify(j.properties.roce.properties.switches, null, 1).slice(0, 800));
console.log(Object.keys(j));
